"""The candidate ranker's parts: its features (`features`), the linear model and its files (`model`), the weight
of its embedding features (`reliance`) and which model a store serves (`choice`). `retrieval/candidate_ranking`
reorders with it; `indexing/adapt` fits its reliance to a store's text."""
