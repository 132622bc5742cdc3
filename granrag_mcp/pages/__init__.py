"""The page as evidence: where a span of a document's stored text lies on its pages (boxes in fractions of each
page), and the pages drawn with that region marked."""
