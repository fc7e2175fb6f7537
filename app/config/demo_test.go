package config

import "testing"

// TestDemo: --demo (a switch, no value needed) and KIMI_DEMO turn demo mode on; demo mode keeps
// its data in its own directory unless one is set; a value that is not a boolean is refused.
func TestDemo(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		vars    map[string]string
		demo    bool
		dataDir string
		err     string
	}{
		{"off by default", nil, nil, false, "kimi-data", ""},
		{"--demo", []string{"--demo"}, nil, true, "kimi-demo-data", ""},
		{"KIMI_DEMO=true", nil, map[string]string{"KIMI_DEMO": "true"}, true, "kimi-demo-data", ""},
		{"--demo=false beats KIMI_DEMO", []string{"--demo=false"}, map[string]string{"KIMI_DEMO": "true"}, false, "kimi-data", ""},
		{"a data directory set wins", []string{"--demo", "--data-dir", "/srv/demo"}, nil, true, "/srv/demo", ""},
		{"KIMI_DATA_DIR wins too", nil, map[string]string{"KIMI_DEMO": "1", "KIMI_DATA_DIR": "/srv/d"}, true, "/srv/d", ""},
		{"not a boolean", nil, map[string]string{"KIMI_DEMO": "maybe"}, false, "", `config: KIMI_DEMO: "maybe" is not true or false`},
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
			if cfg.Demo != c.demo || cfg.DataDir != c.dataDir {
				t.Fatalf("demo=%v data-dir=%q, want %v %q", cfg.Demo, cfg.DataDir, c.demo, c.dataDir)
			}
		})
	}
}
