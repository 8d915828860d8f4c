"""The video codecs a LeRobot export writes, and the encoder settings of each.

`h264` (libx264, the default) and `av1` (SVT-AV1, lerobot's own default): lerobot 0.4's loader
decodes both (torchcodec or PyAV, through FFmpeg), and `info.json` names the codec as the file's
stream does (`h264`, `av1`). Both keep lerobot's `g=2` (a key frame every 2 frames, for random
access) and `yuv420p`. H.264 at x264's `veryfast` preset and its default quality (`crf=23`) encodes
three 320x240 cameras in 3-4 ms of CPU a frame, against 49 ms for SVT-AV1 at its default preset
(`crf=30`, lerobot's), in files of about the same size (docs/benchmarks.md): it is what lets an
export with videos keep up with real time on two cores. AV1 makes smaller files at equal quality
and is what lerobot writes by default; choose it (`--video-codec av1`) where size matters more than
the export's time.

Each encoder runs on one thread (`threads=1`, SVT-AV1's `lp=1`): the bytes then do not depend on the
machine or on whether the encoder has a process of its own (`tests/test_export_parallel.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")


@dataclass(frozen=True)
class VideoCodec:
    name: str
    """As `--video-codec` takes it and as `info.json`'s `video.codec` says it (the stream's codec)."""
    encoder: str
    """PyAV's (FFmpeg's) encoder."""
    options: tuple[tuple[str, str], ...]
    """Encoder options, the speed preset's default among them."""
    presets: tuple[str, ...]
    """The speed presets the encoder takes (fastest first for x264, numbers for SVT-AV1)."""
    preset_key: str = "preset"

    def encoder_options(self, preset: str | int | None = None) -> dict[str, str]:
        """The options for `preset` (None: the codec's default). ValueError naming the valid ones."""
        options = dict(self.options)
        if preset is not None:
            preset = str(preset)
            if preset not in self.presets:
                raise ValueError(f"video preset {preset!r}: {self.name} takes {_listed(self.presets)}")
            options[self.preset_key] = preset
        return options


CODECS: dict[str, VideoCodec] = {
    "h264": VideoCodec("h264", "libx264", (("g", "2"), ("crf", "23"), ("preset", "veryfast"), ("threads", "1")),
                       X264_PRESETS),
    "av1": VideoCodec("av1", "libsvtav1", (("g", "2"), ("crf", "30"), ("svtav1-params", "lp=1")),
                      tuple(str(n) for n in range(14))),
}
DEFAULT_CODEC = "h264"


def video_codec(name: str) -> VideoCodec:
    """The codec `name` ('h264' or 'av1'); ValueError naming the known ones."""
    try:
        return CODECS[name]
    except KeyError:
        raise ValueError(f"video codec {name!r}: expected one of {', '.join(CODECS)}") from None


def _listed(presets: tuple[str, ...]) -> str:
    return f"{presets[0]}..{presets[-1]}" if presets[0].isdigit() else ", ".join(presets)


__all__ = ["CODECS", "DEFAULT_CODEC", "VideoCodec", "X264_PRESETS", "video_codec"]
