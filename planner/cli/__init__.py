"""The command line (``kvplan …`` or ``python -m planner …``): argparse commands over the same
functions the dashboard calls, and their terminal renderers.  Heavy modules (pandas, the
simulator, the advisor) are imported by the command that needs them, so ``kvplan evaluate``
starts fast."""
