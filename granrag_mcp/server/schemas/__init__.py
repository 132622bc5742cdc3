"""What the tools take and return: bounded argument types (`arguments`) and the output models, with their token
budgets and the text that quotes documents as data (`results`, `graph`, `write`)."""
