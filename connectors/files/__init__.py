"""litrank's file formats other than BibTeX: JSON Lines/JSON, CSV/TSV, plain-text abstract lists,
CSFCube, the ``.litrank`` collection index, affinity score files, the settings file and the
local feedback store."""
