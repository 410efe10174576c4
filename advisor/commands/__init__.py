"""Command groups registered on the ``advisor`` typer app at the end of ``advisor.cli``."""
