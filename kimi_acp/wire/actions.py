"""Strings the tools put in their messages and the front ends recognise (approval actions, display
block types): vocabulary below both, so a front end maps them without importing `tools/`."""

from __future__ import annotations

RUN_ACTION = "run command"  # Shell in the foreground
RUN_BACKGROUND_ACTION = "run background command"  # Shell with run_in_background
EDIT_ACTION = "edit file"  # WriteFile, StrReplaceFile inside the workspace
EDIT_OUTSIDE_ACTION = "edit file outside of working directory"
READ_OUTSIDE_ACTION = "read file outside of working directory"
READ_SENSITIVE_ACTION = "read file holding credentials"  # always asked, for one file
FETCH_ACTION = "fetch from the network"  # FetchURL, SearchWeb: per host
HIDE_OUTPUT_TYPE = "acp/hide_output"  # a Shell result whose output a client terminal already shows
READ_ONLY_TYPE = "kimi/read_only"  # a Shell command that ran without a question: it only reads
