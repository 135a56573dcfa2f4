package tomlstrict

import "testing"

func TestKeyLines(t *testing.T) {
	src := `# comment [not.a.table]
name = "x" # trailing
"quoted key" = 1

[target.imap]
address = "a:1"   # line 6
tls = """
multi = line
"""
auth = 'login'

[ compliance . functions . "IMAP APPEND" ]
limit = "2s"

[[messages.sizes]]
size = "1KiB"
[[messages.sizes]]
share = 5

[messages]
recipients = [
  { min = 1, max = 1 },
  {min=2,
]
folders = ["a", "b"]

[load]
x.y.z = 3
arr = [ [1, 2], { a = { b = 1 } } ]
`
	kl := ScanLines([]byte(src))
	tests := []struct {
		path Path
		line int
	}{
		{PathOf("name"), 2},
		{PathOf("quoted key"), 3},
		{PathOf("target"), 5},
		{PathOf("target", "imap", "address"), 6},
		{PathOf("target", "imap", "tls"), 7},
		{PathOf("target", "imap", "auth"), 10},
		{PathOf("target", "imap", "multi"), 5}, // inside a string: falls back to the table
		{PathOf("compliance", "functions", "IMAP APPEND"), 12},
		{PathOf("compliance", "functions", "IMAP APPEND", "limit"), 13},
		{PathOf("compliance", "functions", "IMAP LIST", "limit"), 12}, // absent: nearest ancestor
		{PathOf("messages", "sizes").At(0).With("size"), 16},
		{PathOf("messages", "sizes").At(1), 17},
		{PathOf("messages", "sizes").At(1).With("share"), 18},
		{PathOf("messages", "sizes"), 15},
		{PathOf("messages", "recipients").At(0).With("max"), 22},
		{PathOf("messages", "recipients").At(1).With("min"), 23},
		{PathOf("messages", "recipients").At(1).With("share"), 23},
		{PathOf("messages", "folders").At(1), 25},
		{PathOf("load", "x", "y", "z"), 28},
		{PathOf("load", "x"), 28},
		{PathOf("load", "arr").At(1).withKeys("a", "b"), 29},
		{PathOf("nothing"), 0},
	}
	for _, tt := range tests {
		if got := kl.Locate(tt.path); got != tt.line {
			t.Errorf("locate(%s) = %d, want %d", tt.path, got, tt.line)
		}
	}
	if kl.Has(PathOf("target", "imap", "multi")) {
		t.Error("a key inside a multi-line string was recorded")
	}
	if kl.Has(PathOf("not", "a", "table")) {
		t.Error("a header inside a comment was recorded")
	}
}

func (p Path) withKeys(keys ...string) Path {
	for _, k := range keys {
		p = p.With(k)
	}
	return p
}

func TestKeyPathString(t *testing.T) {
	tests := []struct {
		p    Path
		want string
	}{
		{PathOf("load", "sessions_per_hour"), "load.sessions_per_hour"},
		{PathOf("compliance", "functions", "IMAP APPEND", "limit"), `compliance.functions."IMAP APPEND".limit`},
		{PathOf("messages", "sizes").At(2).With("share"), "messages.sizes[2].share"},
		{PathOf("a-b_c", ""), `a-b_c.""`},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
