"""What ``coxswain serve`` is made of: the manifest folder it compiles and the certificate folder
that holds its discovery CA (the process itself is :mod:`coxswain.shell.serve`)."""
