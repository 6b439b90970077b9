# shared shell helpers
