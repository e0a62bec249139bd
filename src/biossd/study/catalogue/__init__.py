"""The tool catalogue and what is done with its entries: the entries themselves
(:mod:`.entries`, one YAML file each under ``study/catalogue/``), their containers
(:mod:`.containers`), native installs (:mod:`.install`), smoke runs (:mod:`.smoke`) and what
this machine can do with each (:mod:`.status`). The entries' API is re-exported here:
``catalogue.get("samtools_sort")``."""

from biossd.study.catalogue.entries import (
                                            CATALOGUE_DIR,
                                            GROUPS,
                                            KINDS,
                                            MEMORY_RULES,
                                            QUALITY_FORMATS,
                                            REPO_ROOT,
                                            SCHEMA,
                                            STATUSES,
                                            CatalogueError,
                                            Entry,
                                            get,
                                            load_all,
                                            load_entry,
                                            shell_command,
                                            version_matches,
)

__all__ = ["CATALOGUE_DIR", "GROUPS", "KINDS", "MEMORY_RULES", "QUALITY_FORMATS", "REPO_ROOT", "SCHEMA", "STATUSES",
           "CatalogueError", "Entry", "get", "load_all", "load_entry", "shell_command", "version_matches"]
