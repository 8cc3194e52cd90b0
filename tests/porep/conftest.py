"""Puts tests/porep on sys.path (pytest puts a conftest's folder there): the helper modules beside this file
(``_c1_mutations``, ``_host_memory``, ``c1_oracle``) serve the tests of its subfolders too."""
