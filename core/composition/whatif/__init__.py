"""The seed's open problems as what-ifs on a scenario: mixed clusters (:mod:`.mixed`), RL in
the loop (:mod:`.rl`), multimodal placement (:mod:`.multimodal`) and compressed
communication (:mod:`.compression`); :mod:`.report` runs those the scenario plans.

The inputs (:mod:`.inputs`) are part of the scenario; the plans read the scenario and its
estimate, so this package sits above :mod:`llm_planner.core.composition.estimate`.
"""
