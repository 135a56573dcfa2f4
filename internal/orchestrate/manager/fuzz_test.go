package manager

import (
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzManagerRequests: whatever body a holder of the token sends to any
// endpoint, the manager answers (never panics), refuses what does not
// parse with a 4xx and a reason, and registers at most its N generators.
func FuzzManagerRequests(f *testing.F) {
	f.Add(0, `{"version":"v-test","config_hash":"cafe","host":"g","index":-1}`)
	f.Add(0, `{"version":"v-test","index":1}`)
	f.Add(1, `{"error":"x"}`)
	f.Add(2, `{"schema_version":1,"shard":{"index":0}}`)
	f.Add(3, `{}`)
	f.Add(0, `[`)
	f.Fuzz(func(t *testing.T, endpoint int, body string) {
		m, err := New(Options{Generators: 2, Token: testToken, Version: "v-test", ConfigHash: "cafe"})
		if err != nil {
			t.Fatal(err)
		}
		h := m.Handler()
		// A registered generator for the other endpoints.
		code, reply := call(h, "POST", RegisterPath, testToken, "", `{"version":"v-test","config_hash":"cafe","host":"g","index":0}`)
		var w Welcome
		if code != http.StatusOK || json.Unmarshal([]byte(reply), &w) != nil {
			t.Fatalf("register: %d %s", code, reply)
		}
		paths := []string{RegisterPath, FailPath + "?step=0", ResultPath + "?step=1", BeatPath}
		code, reply = call(h, "POST", paths[uint(endpoint)%uint(len(paths))], testToken, w.ID, body)
		if code >= 400 && code < 500 && reply == "" {
			t.Errorf("HTTP %d without a reason", code)
		}
		if code >= 500 {
			t.Errorf("HTTP %d: %s", code, reply)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(m.byID) > 2 {
			t.Errorf("%d generators registered of 2", len(m.byID))
		}
	})
}
