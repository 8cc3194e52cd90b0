"""The ProofShare market: wire models, wallet and request signing, async client, mock market server.

May import ``porep`` (ProofData carries a C1) and, in the mock, ``gpu``; never ``agent``.
"""
