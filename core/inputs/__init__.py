"""Every input of the app, described once, below the estimators that read them.

- :mod:`.compute`, :mod:`.inference`, :mod:`.training`, :mod:`.parallelism`: each tab's
  input model (``ComputeInputs`` with ``FailureInputs``, ``InferenceInputs``,
  ``TrainingInputs``, ``ParallelInputs``);
- :mod:`.calibration`: measured runs (``Measurement``) and ``CalibrationInputs``;
- :mod:`.whatif`: the what-ifs' inputs (``WhatIfInputs`` and its parts);
- :mod:`.scenario`: ``Scenario`` (every input in one value, the file format) and
  ``with_changes``, the one way to derive a scenario with dotted fields changed;
- :mod:`.registry`: each input described once (label, unit parser and formatter, help,
  command-line flag), from which the command line's options are generated and through
  which the window's form rows parse.

This layer imports only primitives and quantities (catalog lookups that validate ids), so
the file format does not depend on the estimators' algorithms.
"""
