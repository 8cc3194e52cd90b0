"""The StackedDRG PoRep circuit in bellperson's exact numbering (circuit.md): the constraint system
(``cs``), bellpepper's gadgets (boolean, uint32, sha256, multipack, num, poseidon, insertion), the Merkle PoR,
create_label, and the per-partition circuit (``stacked``)."""
