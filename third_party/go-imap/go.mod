module github.com/emersion/go-imap/v2

go 1.18

require (
	github.com/emersion/go-message v0.18.2
	github.com/emersion/go-sasl v0.0.0-20241020182733-b788ff22d5a6
)
