package trim

import (
	"slices"
	"strings"
	"testing"
)

const exe = "/usr/bin/tenant-operator"

// mapping renders one smaps entry.
func mapping(rng, perms, path, anon, swap string) string {
	return rng + " " + perms + " 00000000 fe:00 4242                       " + path + "\n" +
		"Size:               1024 kB\nRss:                 512 kB\n" +
		"Anonymous:          " + anon + "\nSwap:               " + swap + "\nVmFlags: rd ex mr mw me\n"
}

func TestDroppable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		smaps string
		want  []span
	}{
		{
			name: "the executable's text and read-only data",
			smaps: mapping("00400000-01e4e000", "r-xp", exe, "0 kB", "0 kB") +
				mapping("01e4e000-03e4e000", "r--p", exe, "0 kB", "0 kB"),
			want: []span{{0x400000, 0x1a4e000}, {0x1e4e000, 0x2000000}},
		},
		{
			name:  "its writable data is never dropped",
			smaps: mapping("03e4e000-03f00000", "rw-p", exe, "0 kB", "0 kB"),
		},
		{
			name:  "a read-only mapping written before it was protected holds private copies",
			smaps: mapping("00400000-00500000", "r--p", exe, "8 kB", "0 kB"),
		},
		{
			name:  "a swapped-out private copy counts as written",
			smaps: mapping("00400000-00500000", "r--p", exe, "0 kB", "4 kB"),
		},
		{
			name: "other files, anonymous memory and shared mappings are left alone",
			smaps: mapping("7f0000000000-7f0000100000", "r-xp", "/usr/lib/libc.so.6", "0 kB", "0 kB") +
				mapping("c000000000-c004000000", "rw-p", "", "4096 kB", "0 kB") +
				mapping("7f0000200000-7f0000300000", "r--s", exe, "0 kB", "0 kB"),
		},
		{
			name:  "the mappings of a replaced executable are not the new file's",
			smaps: mapping("00400000-00500000", "r-xp", exe+" (deleted)", "0 kB", "0 kB"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := droppable(strings.NewReader(tc.smaps), exe)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %x, want %x", got, tc.want)
			}
		})
	}
}

func TestDroppableDeletedExecutable(t *testing.T) {
	smaps := mapping("00400000-00500000", "r-xp", exe+" (deleted)", "0 kB", "0 kB")
	got, err := droppable(strings.NewReader(smaps), exe+" (deleted)")
	if err != nil {
		t.Fatal(err)
	}
	if want := []span{{0x400000, 0x100000}}; !slices.Equal(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

func TestDroppableMalformed(t *testing.T) {
	if _, err := droppable(strings.NewReader(mapping("00500000-00400000", "r-xp", exe, "0 kB", "0 kB")), exe); err == nil {
		t.Fatal("an inverted range was accepted")
	}
}
