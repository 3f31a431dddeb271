"""Every source a rule or an asset row cites names a public document an operator can open."""

from __future__ import annotations

import re

import pytest

_INTERNAL = re.compile(r"knowledge\.md|knowledge base|checks-catalogue|DESIGN\.md|wizard/|assets/|cases/|§", re.I)


_PUBLIC_DOC = re.compile(r"https?://|\(\d\)|man page|Spec|SDM|\b[\w.-]+/[\w.-]+#\d+")


_RULE_MODULES = ("kernel_log", "kernel_log_common", "xid", "edac", "dcgm", "nccl", "driver_chain", "multinode", "tools",
                 "cuda_env")


_ASSETS = ("xid.csv", "xid_severity.csv", "xid_buckets.csv", "xid154_actions.csv", "xid_text_severity.csv",
           "kernel_log_benign.csv", "pcie_only_gpus.csv", "cuda_driver_min.csv", "nccl_floors.csv", "cuda_errors.csv")


@pytest.mark.parametrize("name", _RULE_MODULES)
def test_rule_sources_name_public_documents(name: str) -> None:
    """Every SRC_* of the kernel-log, Xid, EDAC, DCGM, NCCL, driver-chain and multi-node rules names a document an
    operator can open (a URL, a man page, a spec, an issue), never an internal file."""
    import importlib

    mod = importlib.import_module(f"wizard.rules.{name}")
    srcs = {k: v for k, v in vars(mod).items() if k.startswith("SRC") and isinstance(v, str)}
    assert srcs, name
    for k, v in srcs.items():
        assert not _INTERNAL.search(v), (name, k, v)
        assert _PUBLIC_DOC.search(v), (name, k, v)


@pytest.mark.parametrize("asset", _ASSETS)
def test_asset_sources_name_public_documents(asset: str) -> None:
    from wizard.data import table

    rows = list(table(asset))
    assert rows, asset
    for r in rows:
        assert not _INTERNAL.search(r["source"]) and _PUBLIC_DOC.search(r["source"]), (asset, r)
