package release

import "testing"

func TestReleasesOldestFirst(t *testing.T) {
	for i := 1; i < len(Releases); i++ {
		a, _ := parse(Releases[i-1].Version)
		b, ok := parse(Releases[i].Version)
		if !ok || compare(a, b) >= 0 {
			t.Errorf("Releases[%d] %s does not follow %s", i, Releases[i].Version, Releases[i-1].Version)
		}
	}
	if Newest().Version != "v0.66.0" {
		t.Errorf("Newest() = %s, want v0.66.0", Newest().Version)
	}
}

func TestLookup(t *testing.T) {
	for _, v := range []string{"v0.63.0", "0.63.0"} {
		r, err := Lookup(v)
		if err != nil || r.Version != "v0.63.0" || r.WorkloadUsageMetrics {
			t.Errorf("Lookup(%q) = %+v, %v", v, r, err)
		}
	}
	if r, err := Lookup("v0.66.0"); err != nil || !r.WorkloadUsageMetrics || !r.AuthServerTLSPort || !r.SPIFFEFileBundles {
		t.Errorf("Lookup(v0.66.0) = %+v, %v", r, err)
	}
	if _, err := Lookup("v0.64.0"); err == nil {
		t.Error("Lookup(v0.64.0): no error")
	}
}

func TestFor(t *testing.T) {
	for _, c := range []struct {
		in    string
		want  string
		exact bool
		err   bool
	}{
		{in: "v0.63.0", want: "v0.63.0", exact: true},
		{in: "v0.63.2", want: "v0.63.0", exact: true},
		{in: "0.65.1", want: "v0.63.0"},
		{in: "v0.66.0", want: "v0.66.0", exact: true},
		{in: "v0.66.0-rc.1", want: "v0.66.0", exact: true},
		{in: "v0.70.0", want: "v0.66.0"},
		{in: "v1.0.0", want: "v0.66.0"},
		{in: "v0.47.0", err: true},
		{in: "latest", err: true},
		{in: "v0.66", err: true},
	} {
		r, exact, err := For(c.in)
		if (err != nil) != c.err || (err == nil && (r.Version != c.want || exact != c.exact)) {
			t.Errorf("For(%q) = %s, %t, %v; want %s, %t, error %t", c.in, r.Version, exact, err, c.want, c.exact, c.err)
		}
	}
}

func TestTarget(t *testing.T) {
	for in, want := range map[string]string{"v0.47.0": "v0.63.0", "v0.64.1": "v0.63.0", "v0.66.0": "v0.66.0", "": "v0.66.0", "latest": "v0.66.0"} {
		if got := Target(in).Version; got != want {
			t.Errorf("Target(%q) = %s, want %s", in, got, want)
		}
	}
}
