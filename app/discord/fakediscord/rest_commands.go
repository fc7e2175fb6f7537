package fakediscord

import (
	"strconv"

	"github.com/bwmarrin/discordgo"
)

// commands

func (s *Server) commandList(c *call) (*[]*discordgo.ApplicationCommand, *apiError) {
	if c.param("app") != s.opts.AppID {
		return nil, &apiError{status: 403, Code: 20012, Message: "You are not authorized to perform this action on this application"}
	}
	if gid := c.param("guild"); gid != "" {
		g, err := s.guildOf(gid)
		if err != nil {
			return nil, err
		}
		return &g.commands, nil
	}
	return &s.global, nil
}

func (s *Server) getCommands(c *call) (int, any, *apiError) {
	list, err := s.commandList(c)
	if err != nil {
		return 0, nil, err
	}
	if *list == nil {
		return 200, []*discordgo.ApplicationCommand{}, nil
	}
	return 200, *list, nil
}

func (s *Server) overwriteCommands(c *call) (int, any, *apiError) {
	list, err := s.commandList(c)
	if err != nil {
		return 0, nil, err
	}
	var cmds []*discordgo.ApplicationCommand
	if err := c.decode(&cmds); err != nil {
		return 0, nil, err
	}
	if err := validateCommands(cmds); err != nil {
		return 0, nil, err
	}
	old := map[string]string{}
	for _, o := range *list {
		old[strconv.Itoa(int(o.Type))+"/"+o.Name] = o.ID
	}
	out := make([]*discordgo.ApplicationCommand, 0, len(cmds))
	for _, cmd := range cmds {
		n := *cmd
		if n.Type == 0 {
			n.Type = discordgo.ChatApplicationCommand
		}
		n.ApplicationID = s.opts.AppID
		n.GuildID = c.param("guild")
		if id, ok := old[strconv.Itoa(int(n.Type))+"/"+n.Name]; ok {
			n.ID = id
		} else {
			n.ID = s.newID()
		}
		n.Version = s.newID()
		out = append(out, &n)
	}
	*list = out
	return 200, out, nil
}
