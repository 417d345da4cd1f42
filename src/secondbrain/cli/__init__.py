"""The `secondbrain` command: every subcommand, in the order `secondbrain --help` lists them.

The CLI is the one place that composes the services: it starts any of them by name (`secondbrain.service.registry`,
`secondbrain.service.access`) and wires the evaluation to what it measures (`cli.eval_services`). Each module of this
package holds the commands of one idea; service code is imported inside a command, so `--help` stays fast.
"""

from __future__ import annotations

from secondbrain.cli import assistants, database, evaluation, index, model, query, servers
from secondbrain.cli.app import app

app.command()(servers.serve)
app.command("gateway-config")(servers.gateway_config)
app.command()(servers.up)
app.command()(index.ingest)
app.command()(index.status)
app.command()(query.search)
app.command()(query.retrieve)
app.command()(query.ask)
app.command()(assistants.mcp)
app.command("eval")(evaluation.evaluate)
app.command()(database.migrate)
app.command("prepare-model")(model.prepare_model)
app.command()(servers.health)

__all__ = ["app"]
