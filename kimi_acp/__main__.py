"""`python -m kimi_acp` is `kimi`."""

from .cli.main import main

main()
