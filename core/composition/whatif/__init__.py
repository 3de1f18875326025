"""The seed's open problems as what-ifs on a scenario: mixed clusters (:mod:`.mixed`), RL in
the loop (:mod:`.rl`), multimodal placement (:mod:`.multimodal`) and compressed
communication (:mod:`.compression`); :mod:`.report` runs those the scenario plans.

The inputs (:mod:`llm_planner.core.inputs.whatif`) are part of the scenario; the plans read
the scenario and the sections of its estimate (:class:`.estimated.Estimated`), and
:func:`llm_planner.core.composition.estimate.estimate` runs them into ``Report.whatif``: one
producer for the report, the window and every exporter.
"""
