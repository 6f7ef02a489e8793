-- Wireshark dissector for the IP Traffic Flow Description (TFD) option, as qoelab encodes it
-- (crates/core/src/ip/tfd.rs, docs/models/tfd-option.md):
--
--   IPv4 option type 0x9E (copied, class 0, number 30), Len 12
--   IPv6 hop-by-hop option type 0x1E (skip if unknown, not changed en route), Opt Data Len 10
--   then Flags (16 bits: B F D M L S E from the most significant bit, 9 reserved bits),
--   Next Data (32 bits: bytes, u32 or IEEE-754 binary32 if D), Next Time (32 bits: ms).
--
-- It is a postdissector: after Wireshark's own IPv4 and IPv6 dissectors have run, it walks
-- each IPv4 options area and each IPv6 Hop-by-Hop Options header in the frame and adds a
-- "TFD" subtree for every TFD option it finds, with expert info for what qoelab's strict
-- decoder would reject (wrong length, reserved bits, B and F together, NaN/infinite/negative
-- float).
--
-- Use:  tshark -X lua_script:tools/wireshark/tfd.lua -r run.pcap -Y tfd -V
--       or copy into ~/.local/lib/wireshark/plugins/.
-- Filter fields: tfd, tfd.version, tfd.flags.b ... tfd.flags.e, tfd.next_data,
-- tfd.next_data_float, tfd.next_time, tfd.rate.
-- Tested by tools/wireshark/test_tfd_dissector.py.

local tfd = Proto("tfd", "IP Traffic Flow Description option")

local IPV4_TYPE, IPV4_LEN = 0x9E, 12
local IPV6_TYPE, IPV6_LEN = 0x1E, 10
local OPTION_SIZE = 12

local sources = { [0] = "encoder", [1] = "forecast", [2] = "buffer", [3] = "buffer+forecast (invalid)" }

local f = tfd.fields
f.version = ProtoField.uint8("tfd.version", "IP version", base.DEC)
f.type = ProtoField.uint8("tfd.type", "Option type", base.HEX)
f.len = ProtoField.uint8("tfd.len", "Length", base.DEC)
f.flags = ProtoField.uint16("tfd.flags", "Flags", base.HEX)
f.flag_b = ProtoField.bool("tfd.flags.b", "B (from send buffer)", 16, nil, 0x8000)
f.flag_f = ProtoField.bool("tfd.flags.f", "F (from forecaster)", 16, nil, 0x4000)
f.flag_d = ProtoField.bool("tfd.flags.d", "D (Next Data is a float)", 16, nil, 0x2000)
f.flag_m = ProtoField.bool("tfd.flags.m", "M (Next Data is the maximum)", 16, nil, 0x1000)
f.flag_l = ProtoField.bool("tfd.flags.l", "L (large transfer)", 16, nil, 0x0800)
f.flag_s = ProtoField.bool("tfd.flags.s", "S (stream, inelastic)", 16, nil, 0x0400)
f.flag_e = ProtoField.bool("tfd.flags.e", "E (elastic)", 16, nil, 0x0200)
f.flag_reserved = ProtoField.uint16("tfd.flags.reserved", "Reserved", base.HEX, nil, 0x01FF)
f.source = ProtoField.string("tfd.source", "Knowledge source")
f.next_data = ProtoField.uint32("tfd.next_data", "Next Data (bytes)", base.DEC)
f.next_data_float = ProtoField.float("tfd.next_data_float", "Next Data (bytes, float)")
f.next_time = ProtoField.uint32("tfd.next_time", "Next Time (ms)", base.DEC)
f.rate = ProtoField.double("tfd.rate", "Announced rate (bit/s)")

local e_len = ProtoExpert.new("tfd.bad_length", "TFD length field is wrong",
    expert.group.MALFORMED, expert.severity.ERROR)
local e_short = ProtoExpert.new("tfd.truncated", "TFD option shorter than 12 octets",
    expert.group.MALFORMED, expert.severity.ERROR)
local e_reserved = ProtoExpert.new("tfd.reserved_bits", "TFD reserved flag bits are set",
    expert.group.MALFORMED, expert.severity.ERROR)
local e_bf = ProtoExpert.new("tfd.both_b_f", "TFD flags B and F are both set",
    expert.group.MALFORMED, expert.severity.ERROR)
local e_float = ProtoExpert.new("tfd.bad_float", "TFD Next Data float is NaN, infinite or negative",
    expert.group.MALFORMED, expert.severity.ERROR)
local e_dup = ProtoExpert.new("tfd.duplicate", "Second TFD option in the same header",
    expert.group.MALFORMED, expert.severity.WARN)
tfd.experts = { e_len, e_short, e_reserved, e_bf, e_float, e_dup }

local ip_proto = Field.new("ip")
local ip_hdr_len = Field.new("ip.hdr_len")
local hopopts_proto = Field.new("ipv6.hopopts")

-- Adds one TFD option found at `r` (a TvbRange covering type..end of the option).
local function dissect_option(r, version, tree, duplicate)
    local sub = tree:add(tfd, r)
    sub:append_text(version == 4 and " (IPv4)" or " (IPv6)")
    sub:add(f.version, version):set_generated()
    if duplicate then
        sub:add_proto_expert_info(e_dup)
    end
    sub:add(f.type, r(0, 1))
    local len_item = sub:add(f.len, r(1, 1))
    local expected = version == 4 and IPV4_LEN or IPV6_LEN
    if r(1, 1):uint() ~= expected then
        len_item:add_proto_expert_info(e_len, string.format("TFD length is %d, expected %d",
            r(1, 1):uint(), expected))
    end
    if r:len() < OPTION_SIZE then
        sub:add_proto_expert_info(e_short)
        return
    end

    local flags = r(2, 2):uint()
    local flags_item = sub:add(f.flags, r(2, 2))
    for _, field in ipairs({ f.flag_b, f.flag_f, f.flag_d, f.flag_m, f.flag_l, f.flag_s, f.flag_e,
        f.flag_reserved }) do
        flags_item:add(field, r(2, 2))
    end
    if bit.band(flags, 0x01FF) ~= 0 then
        flags_item:add_proto_expert_info(e_reserved)
    end
    local b = bit.band(flags, 0x8000) ~= 0
    local fc = bit.band(flags, 0x4000) ~= 0
    local source = sources[(b and 2 or 0) + (fc and 1 or 0)]
    sub:add(f.source, source):set_generated()
    if b and fc then
        flags_item:add_proto_expert_info(e_bf)
    end

    local next_data
    if bit.band(flags, 0x2000) ~= 0 then
        next_data = r(4, 4):float()
        local item = sub:add(f.next_data_float, r(4, 4))
        -- NaN compares unequal to itself; -0.0 has a negative reciprocal.
        local bad = next_data ~= next_data or next_data == math.huge or next_data == -math.huge
            or next_data < 0 or (next_data == 0 and 1 / next_data < 0)
        if bad then
            item:add_proto_expert_info(e_float)
            next_data = nil
        end
    else
        next_data = r(4, 4):uint()
        sub:add(f.next_data, r(4, 4))
    end
    local next_time = r(8, 4):uint()
    sub:add(f.next_time, r(8, 4))

    local summary = string.format(": %s, Next Data %s B, Next Time %d ms", source,
        next_data and string.format("%.10g", next_data) or "invalid", next_time)
    if next_data and next_time > 0 then
        local rate = next_data * 8 * 1000 / next_time
        sub:add(f.rate, rate):set_generated()
        summary = summary .. string.format(" (%.6g bit/s)", rate)
    end
    sub:append_text(summary)
end

-- RFC 791 §3.1: walk the options area up to End of Option List.
local function walk_ipv4(opts, tree)
    local i, n, seen = 0, opts:len(), false
    while i < n do
        local t = opts(i, 1):uint()
        if t == 0 then
            return
        elseif t == 1 then
            i = i + 1
        else
            if i + 1 >= n then return end
            local len = opts(i + 1, 1):uint()
            if len < 2 or i + len > n then return end -- Wireshark's ip dissector flags this
            if t == IPV4_TYPE then
                dissect_option(opts(i, len), 4, tree, seen)
                seen = true
            end
            i = i + len
        end
    end
end

-- RFC 8200 §4.2: walk the options of a Hop-by-Hop header (after Next Header, Hdr Ext Len).
local function walk_ipv6(hdr, tree)
    local i, n, seen = 2, hdr:len(), false
    while i < n do
        local t = hdr(i, 1):uint()
        if t == 0 then -- Pad1
            i = i + 1
        else
            if i + 1 >= n then return end
            local len = 2 + hdr(i + 1, 1):uint()
            if i + len > n then return end
            if t == IPV6_TYPE then
                dissect_option(hdr(i, len), 6, tree, seen)
                seen = true
            end
            i = i + len
        end
    end
end

function tfd.dissector(tvb, pinfo, tree)
    local ips = { ip_proto() }
    local hlens = { ip_hdr_len() }
    for k, fi in ipairs(ips) do
        local hlen = hlens[k] and hlens[k].value or 0
        local r = fi.range
        if r and hlen > 20 and r:len() >= hlen then
            walk_ipv4(r(20, hlen - 20), tree)
        end
    end
    for _, fi in ipairs({ hopopts_proto() }) do
        local r = fi.range
        if r and r:len() >= 8 then
            -- The protocol item spans the header; cap at (Hdr Ext Len + 1) * 8 all the same.
            local hlen = math.min(r:len(), (r(1, 1):uint() + 1) * 8)
            walk_ipv6(r(0, hlen), tree)
        end
    end
end

register_postdissector(tfd)
