"""systemd 252's reading of unit files and environment files (quoting, specifiers, ``Environment=``,
``EnvironmentFile=``): shared by the simulated Linux nodes, which start services with it, and the
judge, which reads a real node's files with the same rules."""
