package config

import "testing"

// TestDemo: --demo (a switch, no value needed) and KIMI_DEMO turn demo mode on; demo mode keeps
// its data in its own directory and listens on its own port (127.0.0.1:8090, beside make run's
// 8080) unless those are set; a value that is not a boolean is refused.
func TestDemo(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		vars    map[string]string
		demo    bool
		dataDir string
		addr    string
		err     string
	}{
		{"off by default", nil, nil, false, "kimi-data", "127.0.0.1:8080", ""},
		{"--demo", []string{"--demo"}, nil, true, "kimi-demo-data", "127.0.0.1:8090", ""},
		{"KIMI_DEMO=true", nil, map[string]string{"KIMI_DEMO": "true"}, true, "kimi-demo-data", "127.0.0.1:8090", ""},
		{"--demo=false beats KIMI_DEMO", []string{"--demo=false"}, map[string]string{"KIMI_DEMO": "true"}, false, "kimi-data", "127.0.0.1:8080", ""},
		{"a data directory set wins", []string{"--demo", "--data-dir", "/srv/demo"}, nil, true, "/srv/demo", "127.0.0.1:8090", ""},
		{"KIMI_DATA_DIR wins too", nil, map[string]string{"KIMI_DEMO": "1", "KIMI_DATA_DIR": "/srv/d"}, true, "/srv/d", "127.0.0.1:8090", ""},
		{"an address set wins", []string{"--demo", "--addr", "0.0.0.0:9000"}, nil, true, "kimi-demo-data", "0.0.0.0:9000", ""},
		{"KIMI_ADDR wins too", nil, map[string]string{"KIMI_DEMO": "true", "KIMI_ADDR": "127.0.0.1:8080"}, true, "kimi-demo-data", "127.0.0.1:8080", ""},
		{"not a boolean", nil, map[string]string{"KIMI_DEMO": "maybe"}, false, "", "", `config: KIMI_DEMO: "maybe" is not true or false`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := load(t, c.args, c.vars, nil)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Demo != c.demo || cfg.DataDir != c.dataDir || cfg.Addr != c.addr {
				t.Fatalf("demo=%v data-dir=%q addr=%q, want %v %q %q", cfg.Demo, cfg.DataDir, cfg.Addr, c.demo, c.dataDir, c.addr)
			}
		})
	}
}
