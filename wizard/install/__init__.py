"""Install planners: what to install on this host and how (driver routes, package lists), apart from
the rules that judge what is installed (:mod:`wizard.rules`)."""
