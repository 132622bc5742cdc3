"""Per client session: its recent queries (`memory`) and the `memory` argument that names them (`handle`)."""
