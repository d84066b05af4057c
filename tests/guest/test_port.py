"""Unit tests of guest.parse_port: the files put_file sends on the virtio serial port."""

import unittest

import guest


class ParsePort(unittest.TestCase):
    def test_files_one_after_another_binary_and_empty(self):
        data = b"FILE a.txt 6\nhello\nFILE b.bin 3\n\x00\n\xffFILE empty 0\n"
        markers, files = guest.parse_port(data)
        self.assertEqual(markers, [])
        self.assertEqual(files, {"a.txt": b"hello\n", "b.bin": b"\x00\n\xff", "empty": b""})

    def test_a_file_cut_short_is_an_error_and_the_ones_before_it_are_kept(self):
        markers, files = guest.parse_port(b"FILE a 1\nxFILE b 10\nabc")
        self.assertEqual(files, {"a": b"x"})
        self.assertEqual(markers, [("file-error", "b cut short: 3 of 10 bytes")])

    def test_a_header_that_cannot_be_read_stops_the_parse(self):
        markers, files = guest.parse_port(b"FILE a 1\nxgarbage without a header")
        self.assertEqual(files, {"a": b"x"})
        self.assertEqual(len(markers), 1)
        self.assertEqual(markers[0][0], "file-error")
        self.assertIn("no file header at byte 10", markers[0][1])

    def test_nothing_sent_is_nothing(self):
        self.assertEqual(guest.parse_port(b""), ([], {}))


if __name__ == "__main__":
    unittest.main()
