package workload

import (
	"strings"
	"testing"
)

// Sink TLS takes both certificate files or neither (a generated
// self-signed certificate); one without the other is refused, on its line.
func TestSinkTLSCertificateFiles(t *testing.T) {
	tests := []struct {
		name    string
		sink    string
		wantErr string // "" accepts
	}{
		{"starttls generated", `tls = "starttls"`, ""},
		{"implicit generated", `tls = "implicit"`, ""},
		{"implicit with both files", "tls = \"implicit\"\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"", ""},
		{"none", `tls = "none"`, ""},
		{"cert without key", "tls = \"implicit\"\ncert_file = \"c.pem\"", "sink.toml:6: sink.cert_file: needs sink.key_file too"},
		{"key without cert", "tls = \"starttls\"\nkey_file = \"k.pem\"", "sink.toml:6: sink.key_file: needs sink.cert_file too"},
		{"bad mode", `tls = "ssl"`, "sink.toml:5: sink.tls: must be one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := "[target]\nembedded = true\n\n[sink]\n" + tt.sink + "\n"
			c, err := ParseConfig("sink.toml", []byte(data))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseConfig() = %v", err)
				}
				if got := strings.SplitN(tt.sink, "\n", 2)[0]; got != `tls = "`+string(c.Sink.TLS)+`"` {
					t.Errorf("Sink.TLS = %q, from %q", c.Sink.TLS, got)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseConfig() accepted %q", tt.sink)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseConfig() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
