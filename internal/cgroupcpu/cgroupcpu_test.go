package cgroupcpu

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestQuota(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "v1", "cpu.cfs_quota_us"), "25000\n")
	write(t, filepath.Join(dir, "v1", "cpu.cfs_period_us"), "100000\n")
	write(t, filepath.Join(dir, "v1-free", "cpu.cfs_quota_us"), "-1\n")
	write(t, filepath.Join(dir, "v1-free", "cpu.cfs_period_us"), "100000\n")
	write(t, filepath.Join(dir, "v2", "cpu.max"), "150000 100000\n")
	write(t, filepath.Join(dir, "v2-free", "cpu.max"), "max 100000\n")
	write(t, filepath.Join(dir, "v2-bad", "cpu.max"), "lots 100000\n")
	for _, tc := range []struct {
		dir   string
		cores float64
		ok    bool
	}{
		{"v1", 0.25, true},
		{"v1-free", 0, false},
		{"v2", 1.5, true},
		{"v2-free", 0, false},
		{"v2-bad", 0, false},
		{"missing", 0, false},
	} {
		if cores, ok := Quota(filepath.Join(dir, tc.dir)); cores != tc.cores || ok != tc.ok {
			t.Errorf("Quota(%s) = %v, %v; want %v, %v", tc.dir, cores, ok, tc.cores, tc.ok)
		}
	}
	// The lowest limit on the path binds.
	if cores, ok := Limit([]string{filepath.Join(dir, "v2"), filepath.Join(dir, "v1-free"), filepath.Join(dir, "v1")}); cores != 0.25 || !ok {
		t.Errorf("Limit = %v, %v; want 0.25, true", cores, ok)
	}
	if _, ok := Limit([]string{filepath.Join(dir, "v1-free"), filepath.Join(dir, "missing")}); ok {
		t.Error("Limit found a limit where there is none")
	}
}

const mountinfoV1 = `22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
40 31 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const mountinfoV2 = `22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
30 22 0:27 /kubepods/pod1 /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate
`

// selfDirs finds the quota's hierarchy (v1 cpu, else v2) and the
// accounting one (v1 cpuacct, alone or mounted with cpu, else v2).
func TestSelfDirs(t *testing.T) {
	const joint = `32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct` + "\n"
	for _, tc := range []struct {
		name, controller  string
		cgroup, mountinfo string
		want              []string
	}{
		{"v1 cpu controller", "cpu", "9:name=systemd:/\n4:cpu:/fulcrum-1/r1\n3:cpuacct:/fulcrum-1/r1\n0::/\n", mountinfoV1,
			[]string{"/sys/fs/cgroup/cpu/fulcrum-1/r1", "/sys/fs/cgroup/cpu/fulcrum-1", "/sys/fs/cgroup/cpu"}},
		{"v1 separate cpuacct", "cpuacct", "4:cpu:/fulcrum-1/r1\n3:cpuacct:/fulcrum-1/r1\n0::/\n", mountinfoV1,
			[]string{"/sys/fs/cgroup/cpuacct/fulcrum-1/r1", "/sys/fs/cgroup/cpuacct/fulcrum-1", "/sys/fs/cgroup/cpuacct"}},
		{"v1 joint cpu,cpuacct", "cpu", "4:cpu,cpuacct:/a\n", joint, []string{"/sys/fs/cgroup/cpu,cpuacct/a", "/sys/fs/cgroup/cpu,cpuacct"}},
		{"v1 joint cpu,cpuacct, accounting", "cpuacct", "4:cpu,cpuacct:/a\n", joint, []string{"/sys/fs/cgroup/cpu,cpuacct/a", "/sys/fs/cgroup/cpu,cpuacct"}},
		{"v2 mounted below the hierarchy's root", "cpu", "0::/kubepods/pod1/ctr\n", mountinfoV2,
			[]string{"/sys/fs/cgroup/ctr", "/sys/fs/cgroup"}},
		{"v2, accounting", "cpuacct", "0::/kubepods/pod1/ctr\n", mountinfoV2, []string{"/sys/fs/cgroup/ctr", "/sys/fs/cgroup"}},
		{"v2 at the root", "cpu", "0::/\n", mountinfoV2, nil}, // "/" is above the mounted part
		{"no cgroup mount (ip netns exec)", "cpu", "4:cpu:/x\n0::/x\n", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", nil},
		{"escaped mount point", "cpu", "0::/a b\n", `30 22 0:27 / /sys/fs/cg\040x rw - cgroup2 cgroup2 rw` + "\n",
			[]string{"/sys/fs/cg x/a b", "/sys/fs/cg x"}},
		{"garbage", "cpu", "nonsense\n", "also nonsense\n", nil},
	} {
		if got := selfDirs([]byte(tc.cgroup), []byte(tc.mountinfo), tc.controller); !slices.Equal(got, tc.want) {
			t.Errorf("%s: selfDirs(%s) = %q, want %q", tc.name, tc.controller, got, tc.want)
		}
	}
}

// Limit names the accounting directory of the cgroup whose quota binds,
// which may be an ancestor of the process's own.
func TestSelfLimitFindsTheBindingCgroupsAccounting(t *testing.T) {
	root := t.TempDir()
	cpu, acct := filepath.Join(root, "cpu"), filepath.Join(root, "cpuacct")
	write(t, filepath.Join(cpu, "pod", "cpu.cfs_quota_us"), "50000\n")
	write(t, filepath.Join(cpu, "pod", "cpu.cfs_period_us"), "100000\n")
	write(t, filepath.Join(cpu, "pod", "ctr", "cpu.cfs_quota_us"), "-1\n")
	write(t, filepath.Join(cpu, "pod", "ctr", "cpu.cfs_period_us"), "100000\n")
	write(t, filepath.Join(acct, "pod", "cpuacct.usage"), "1500000000\n")
	write(t, filepath.Join(acct, "pod", "ctr", "cpuacct.usage"), "500000000\n")
	s := Self{
		CPU:  []string{filepath.Join(cpu, "pod", "ctr"), filepath.Join(cpu, "pod"), cpu},
		Acct: []string{filepath.Join(acct, "pod", "ctr"), filepath.Join(acct, "pod"), acct},
	}
	cores, dir, ok := s.Limit()
	if !ok || cores != 0.5 || dir != filepath.Join(acct, "pod") {
		t.Fatalf("Limit = %v, %q, %v; want 0.5, %q, true", cores, dir, ok, filepath.Join(acct, "pod"))
	}
	if u, err := Usage(dir); err != nil || u != 1500*time.Millisecond {
		t.Errorf("Usage(%s) = %v, %v; want 1.5s", dir, u, err)
	}
	// The cpuacct hierarchy does not hold the cgroup: no accounting.
	s.Acct = []string{filepath.Join(acct, "other"), acct}
	if _, dir, ok := s.Limit(); !ok || dir != "" {
		t.Errorf("Limit without a matching accounting cgroup = %q, %v; want \"\", true", dir, ok)
	}
	// No quota anywhere.
	s.CPU = []string{filepath.Join(cpu, "pod", "ctr"), cpu}
	if _, _, ok := s.Limit(); ok {
		t.Error("Limit found a quota where there is none")
	}
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "v1", "cpuacct.usage"), "123456789\n")
	write(t, filepath.Join(dir, "v2", "cpu.stat"), "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
	write(t, filepath.Join(dir, "v2-bad", "cpu.stat"), "usage_usec lots\n")
	write(t, filepath.Join(dir, "v2-none", "cpu.stat"), "user_usec 1\n")
	write(t, filepath.Join(dir, "v1-neg", "cpuacct.usage"), "-5\n")
	for _, tc := range []struct {
		dir   string
		want  time.Duration
		error string
	}{
		{"v1", 123456789, ""},
		{"v2", 2500 * time.Millisecond, ""},
		{"v2-bad", 0, `usage_usec "lots" is not a count of microseconds`},
		{"v2-none", 0, "no usage_usec line"},
		{"v1-neg", 0, `"-5" is not a count of nanoseconds`},
		{"missing", 0, "no cpuacct.usage or cpu.stat"},
	} {
		got, err := Usage(filepath.Join(dir, tc.dir))
		switch {
		case tc.error == "" && (err != nil || got != tc.want):
			t.Errorf("Usage(%s) = %v, %v; want %v", tc.dir, got, err, tc.want)
		case tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)):
			t.Errorf("Usage(%s) error %v, want one containing %q", tc.dir, err, tc.error)
		}
	}
}

func FuzzParseUsage(f *testing.F) {
	f.Add("cpu.stat", []byte("usage_usec 2500000\nuser_usec 1\n"))
	f.Add("cpuacct.usage", []byte("123456789\n"))
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		file := "cpuacct.usage"
		if len(name)%2 == 0 {
			file = "cpu.stat"
		}
		if d, err := parseUsage(file, b); err == nil && d < 0 {
			t.Fatalf("%s %q: negative usage %v", file, b, d)
		}
	})
}

// On this machine, whatever it is, SelfDirs must not fail: it lists
// directories that exist, or nothing.
func TestSelfDirsExist(t *testing.T) {
	for _, d := range SelfDirs() {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("SelfDirs lists %s, which is not a directory (%v)", d, err)
		}
	}
}

func FuzzSelfDirs(f *testing.F) {
	f.Add([]byte("4:cpu:/fulcrum-1/r1\n0::/\n"), []byte(mountinfoV1))
	f.Add([]byte("0::/kubepods/pod1/ctr\n"), []byte(mountinfoV2))
	f.Fuzz(func(t *testing.T, cgroup, mountinfo []byte) {
		for _, controller := range []string{"cpu", "cpuacct"} {
			for _, d := range selfDirs(cgroup, mountinfo, controller) {
				if !filepath.IsAbs(d) {
					t.Fatalf("relative directory %q", d)
				}
			}
		}
	})
}
