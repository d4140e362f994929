package trim

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// span is one mapping of the executable that may be dropped.
type span struct{ start, length uint64 }

// droppable reads /proc/<pid>/smaps and returns the executable's private
// mappings that are read-only and hold no anonymous page, resident or swapped. Only those are
// safe to drop: their pages are exactly the file's, so a fault brings back
// the same bytes. A writable mapping, or a read-only one written before it
// was protected (RELRO), holds private copies that dropping would lose.
func droppable(smaps io.Reader, exe string) ([]span, error) {
	var (
		spans []span
		cur   *span
	)
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Text()
		if key, value, ok := field(line); ok {
			// A swapped-out page was anonymous too.
			if (key == "Anonymous" || key == "Swap") && cur != nil && value != "0 kB" {
				cur = nil
			}
			continue
		}
		if cur != nil {
			spans = append(spans, *cur)
		}
		cur = nil
		f := strings.Fields(line)
		if len(f) < 6 || strings.Join(f[5:], " ") != exe || len(f[1]) != 4 || strings.ContainsRune(f[1], 'w') || f[1][3] != 'p' {
			continue
		}
		start, end, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("smaps: malformed range %q", f[0])
		}
		a, errA := strconv.ParseUint(start, 16, 64)
		b, errB := strconv.ParseUint(end, 16, 64)
		if errA != nil || errB != nil || b <= a {
			return nil, fmt.Errorf("smaps: malformed range %q", f[0])
		}
		cur = &span{start: a, length: b - a}
	}
	if cur != nil {
		spans = append(spans, *cur)
	}
	return spans, sc.Err()
}

// field splits a "Key:   value" line of smaps; mapping lines start with an
// address range and have no colon in their first field.
func field(line string) (key, value string, ok bool) {
	key, value, ok = strings.Cut(line, ":")
	if !ok || strings.ContainsAny(key, " -") {
		return "", "", false
	}
	return key, strings.TrimSpace(value), true
}
