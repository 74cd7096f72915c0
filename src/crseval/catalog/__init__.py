"""The movie catalog: stage `index_catalog` and `train_lda`.

Reads the catalog JSON and the word list of values that are not genres; writes
`catalog/films.parquet`, `catalog/concepts.parquet` and `catalog/summary.json` (`build`, with the
spelling rules of `normalize`), read back by every later stage through `index.CatalogIndex`; and
the LDA topic model over the plots, `topics/` (`topics`). Read side for the systems under test: ranking films
for wished values (`retrieval`), and the catalog toolkit a tool-using recommender calls (`toolkit`: searching
films, reading a film's details, committing recommendations).
"""
