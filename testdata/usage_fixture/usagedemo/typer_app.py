from typing import Annotated

import typer

app = typer.Typer()


@app.command()
def hello(
    name: str,
    formal: bool = False,
    count: Annotated[int, typer.Option("--count", "-n", help="Times to greet.")] = 1,
):
    """Says hello."""


@app.command("bye")
def goodbye(ctx: typer.Context, name: str = typer.Option("World", help="Who leaves.")):
    pass
