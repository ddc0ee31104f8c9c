from decimal import Decimal

import pytest
from pydantic import ValidationError

from trust.adapters.chain.compiler import Artifact
from trust.settings import ProtocolSettings, Settings


def test_defaults_are_the_papers_numbers() -> None:
    p = ProtocolSettings().to_params()
    assert p["tauBps"] == 6_600  # eq. 3.3
    assert p["gammaWad"] == 10**17  # eq. 3.8
    assert (p["pMinBps"], p["pMaxBps"]) == (3_500, 5_000)  # eq. 3.9, p_min as adjusted in sec. 4.7
    assert (p["auditorShareBps"], p["treasuryShareBps"], p["stakerShareBps"], p["insuranceShareBps"]) == (
        7_000,
        1_500,
        1_000,
        500,
    )  # sec. 6.1
    assert 5_500 <= p["betaBps"] <= 7_500  # sec. 3.2.4: beta in [0.55, 0.75]
    assert p["minStakeTier1"] < p["minStakeTier2"] < p["minStakeTier3"]  # Table 2: low, medium, high


def test_params_follow_the_contract_struct_order(artifacts: dict[str, Artifact]) -> None:
    keys = list(ProtocolSettings().to_params())
    (getter,) = [item for item in artifacts["ProtocolParams"].abi if item.get("name") == "params"]
    assert keys == [component["name"] for component in getter["outputs"][0]["components"]]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"p_min": Decimal("0.6"), "p_max": Decimal("0.5")}, "p_min"),
        ({"auditor_share": Decimal("0.8")}, "fee shares add up to 1.10"),
        ({"min_stake_tier2_tokens": Decimal(50)}, "minimum stakes must rise"),
        ({"tau": Decimal("0.5")}, "tau"),
    ],
)
def test_inconsistent_settings_are_refused_with_the_reason(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ProtocolSettings(**change)


def test_finer_than_a_basis_point_is_refused() -> None:
    with pytest.raises(ValueError, match="finer than one basis point"):
        ProtocolSettings(tau=Decimal("0.66001")).to_params()


def test_environment_overrides_nested_fields(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("TRUST_PROTOCOL__TAU", "0.7")
    monkeypatch.setenv("TRUST_DEVNET__PORT", "9545")
    monkeypatch.setenv("TRUST_HOME", str(tmp_path))
    settings = Settings()
    assert settings.protocol.tau == Decimal("0.7")
    assert settings.effective_rpc_url == "http://127.0.0.1:9545"
    assert settings.devnet_dir == tmp_path / "devnet"
    devnet = settings.devnet_protocol()
    assert devnet.commit_window_seconds == settings.devnet.commit_window_seconds
    assert devnet.tau == Decimal("0.7")
    # A devnet of the default size has a person for each of an escalated round's 2k+1 draws.
    from trust.lab.devnet import tier_plan

    assert tier_plan(settings.devnet.auditors).count(3) >= 2 * devnet.committee_size_tier2 + 1


def test_deployments_live_in_the_checkout_else_in_the_home(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("TRUST_DEPLOYMENTS_DIR", raising=False)
    settings = Settings(home=tmp_path / "home")
    assert settings.deployments_path(tmp_path / "repo") == tmp_path / "repo" / "deploy" / "deployments"
    # An installed package (no checkout) keeps them beside its other state.
    assert settings.deployments_path(None) == tmp_path / "home" / "deployments"
    chosen = Settings(home=tmp_path / "home", deployments_dir=tmp_path / "mine")
    assert chosen.deployments_path(None) == chosen.deployments_path(tmp_path / "repo") == tmp_path / "mine"
