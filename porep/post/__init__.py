"""Proofs of Spacetime: WinningPoSt and WindowPoSt, the FallbackPoSt circuit (docs post.md)."""
