package workload

import (
	"strings"
	"testing"
)

func TestInboundEndpointDefaults(t *testing.T) {
	smtp := Endpoint{Address: "127.0.0.1:587", TLS: "starttls", CAFile: "ca.pem", ServerName: "mx.test", Auth: "plain"}
	for _, tc := range []struct {
		name    string
		inbound Endpoint
		want    Endpoint
	}{
		{"unset: SMTP's address and TLS, no auth", Endpoint{},
			Endpoint{Address: "127.0.0.1:587", TLS: "starttls", CAFile: "ca.pem", ServerName: "mx.test", Auth: "none"}},
		{"own address, SMTP's TLS", Endpoint{Address: "127.0.0.1:25"},
			Endpoint{Address: "127.0.0.1:25", TLS: "starttls", CAFile: "ca.pem", ServerName: "mx.test", Auth: "none"}},
		{"own TLS settings are not mixed with SMTP's", Endpoint{Address: "127.0.0.1:25", TLS: "none"},
			Endpoint{Address: "127.0.0.1:25", TLS: "none", Auth: "none"}},
		{"explicit auth kept", Endpoint{Auth: "login"},
			Endpoint{Address: "127.0.0.1:587", TLS: "starttls", CAFile: "ca.pem", ServerName: "mx.test", Auth: "login"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TargetConfig{SMTP: smtp, Inbound: tc.inbound}.InboundEndpoint()
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestInboundEndpointValidated(t *testing.T) {
	_, err := ParseConfig("in.toml", []byte(`
[target]
imap = { address = "127.0.0.1:1143" }
smtp = { address = "127.0.0.1:2525" }
[target.inbound]
address = "nowhere"
tls = "sometimes"
`))
	if err == nil {
		t.Fatal("bad target.inbound accepted")
	}
	for _, want := range []string{"in.toml:6: target.inbound.address", "in.toml:7: target.inbound.tls"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
