"""`trust wallet`: encrypted keystore wallets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trust.cli.common import (
    PasswordFileOption,
    console,
    keystore_password,
)

wallet_app = typer.Typer(help="Encrypted keystore wallets.", no_args_is_help=True)


@wallet_app.command("new")
def wallet_new_cmd(
    path: Annotated[Path, typer.Argument(help="where to write the keystore (refuses to overwrite)")],
    password_file: PasswordFileOption = None,
) -> None:
    """Create a new account in an encrypted keystore file (mode 0600) and print its address."""
    from trust.chain.wallets import create_keystore

    account = create_keystore(path, keystore_password(password_file, confirm=True))
    console.print(f"{account.address}  {path}")
