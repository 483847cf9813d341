"""The lab's destinations: HTTPS origins (registries, sites) behind an egress firewall."""
