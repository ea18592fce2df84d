// Package manpage writes section-1 manual pages for a cobra command tree (cobra's doc generator, through
// go-md2man). Only the build-time generator links it (`go run -tags mangen ./cmd/hlaunch __man DIR`, run by
// `make man`); the installed binaries do not carry the markdown and roff packages.
package manpage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/hlaunch/hlaunch/internal/version"
)

// WriteTree writes one page per available command of root into dir, named as man(1) looks them up:
// hlaunch.1, hlaunch-exec.1, hlaunch-completion-bash.1, ... The date is SOURCE_DATE_EPOCH's when set, so
// that a packaged build is reproducible.
func WriteTree(root *cobra.Command, dir string) error {
	date := time.Now().UTC()
	if e := os.Getenv("SOURCE_DATE_EPOCH"); e != "" {
		var sec int64
		if _, err := fmt.Sscan(e, &sec); err != nil {
			return fmt.Errorf("manpage: SOURCE_DATE_EPOCH %q: want seconds since 1970", e)
		}
		date = time.Unix(sec, 0).UTC()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manpage: %w", err)
	}
	root.DisableAutoGenTag = true
	return walk(root, func(c *cobra.Command) error {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		f, err := os.Create(filepath.Join(dir, name+".1"))
		if err != nil {
			return fmt.Errorf("manpage: %w", err)
		}
		// A header per page: cobra fills an empty title from the first page it is given.
		h := &doc.GenManHeader{
			Title:   strings.ToUpper(name),
			Section: "1",
			Date:    &date,
			Source:  "hlaunch " + version.Version,
			Manual:  "hlaunch manual",
		}
		c.DisableAutoGenTag = true
		if err := doc.GenMan(c, h, f); err != nil {
			f.Close()
			return fmt.Errorf("manpage: %s: %w", name, err)
		}
		return f.Close()
	})
}

// walk calls fn for c and every available descendant.
func walk(c *cobra.Command, fn func(*cobra.Command) error) error {
	if err := fn(c); err != nil {
		return err
	}
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := walk(sub, fn); err != nil {
			return err
		}
	}
	return nil
}
