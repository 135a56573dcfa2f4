module github.com/mailbench/mailbench

go 1.26.8
