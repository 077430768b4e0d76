import click


@click.group()
def cli():
    """Document tools.

    More text that is not the summary.
    """


@cli.command()
@click.option("--count", "-c", default=1, help="How many greetings.")
@click.argument("name")
def greet_user(count, name):
    """Greets someone."""


@cli.command(name="list")
@click.option("--all", "show_all", is_flag=True, help="Include hidden documents.")
def list_cmd(show_all):
    pass
