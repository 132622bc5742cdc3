"""Scripts that produce files the package ships (fitted models, projections) or docs it quotes."""
