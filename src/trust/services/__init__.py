"""Services: what a provider, an auditor or a beacon operator runs. The provider SDK (`sdk`), the
auditor worker (`worker`), key delivery (`delivery`), refinement (`refine`), offline localization
(`localize`), model decomposition (`decompose`) and the beacon signer (`beacon`). Each application
(leaderboard, arena, swarm, governance, annotation, verification) gets a package here."""

__all__: list[str] = []
