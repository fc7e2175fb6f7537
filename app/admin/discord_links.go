package admin

import (
	"net/url"
	"strconv"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// messageLink is where an "Open in Discord" link of a message goes: the
// message on discord.com, or in demo mode (whose messages live only in the
// built-in fake) /demo at that channel, scrolled to that message.
func (s *Server) messageLink(guild, channel, message uint64) string {
	ch, msg := strconv.FormatUint(channel, 10), strconv.FormatUint(message, 10)
	if s.opts.Demo != nil {
		return "/demo?" + url.Values{form.FieldDemoChannel: {ch}}.Encode() + "#" + templates.DemoMessageAnchor(msg)
	}
	return "https://discord.com/channels/" + strconv.FormatUint(guild, 10) + "/" + ch + "/" + msg
}
