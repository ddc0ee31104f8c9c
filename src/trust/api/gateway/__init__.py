"""The provider gateway: `/v1/audits` (`service`), request and reply models, epoch batching, billing
against the escrow, API keys and access."""

__all__: list[str] = []
