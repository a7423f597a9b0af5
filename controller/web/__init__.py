"""The fleet page: a read-only, server-rendered view of what the API serves, behind a login form."""
