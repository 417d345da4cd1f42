"""`python -m secondbrain` is the `secondbrain` command."""

from secondbrain.cli import app

app(prog_name="secondbrain")
