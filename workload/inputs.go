package workload

// Upper bounds of the inputs that size a run, far above real use: a value
// above its bound would exhaust memory rather than describe a real run.
const (
	// MaxUsers bounds the users listed in users.file.
	MaxUsers = 10_000_000
)
