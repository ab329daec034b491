module hangwatch.local/tools

go 1.26.0
