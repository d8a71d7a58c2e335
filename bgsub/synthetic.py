"""Synthetic surveillance scenes with exact ground truth, made deterministically.

A :class:`SyntheticScene` renders frame ``t`` of a street-side scene and its
CDnet labels from nothing but a seed, so the same call gives the same pixels on
every run. What is in it, and why:

* a textured static background (sky with clouds, a building with windows, a
  road with lane marks, a kerb): edges and texture that a subtractor must not
  flag;
* dynamic background a plain frame difference flags but a good background
  model learns: rippling water with glints (bottom band) and a tree whose
  foliage sways and flickers (right side);
* slow global illumination change (gain and colour temperature drift);
* Gaussian sensor noise, fresh every frame;
* moving objects (cars and pedestrians, anti-aliased) with soft cast shadows on
  the ground;
* a burnt-in timestamp, outside the region of interest.

Ground truth uses CDnet's labels: 255 moving object, 50 cast shadow, 170
unknown (the one-pixel anti-aliased rim of objects), 85 outside the ROI (the
timestamp box), 0 static background (water and foliage included).

Write a CDnet-layout sequence and a video file from the command line::

    python -m bgsub.synthetic --out videos/sample --video videos/sample.mp4

or from Python::

    from bgsub.synthetic import SyntheticScene, SceneConfig
    scene = SyntheticScene(SceneConfig(width=160, height=120, frames=50, seed=3))
    for image, labels in scene:        # BGR uint8 (H, W, 3), uint8 (H, W)
        ...
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import cv2
import numpy as np

from bgsub.cdnet import LABEL_MOTION, LABEL_OUTSIDE_ROI, LABEL_SHADOW, LABEL_STATIC, LABEL_UNKNOWN
from bgsub.writers import AtomicDir

__all__ = ["SceneConfig", "MovingObject", "SyntheticScene", "write_sequence", "write_video", "main"]


@dataclass(frozen=True)
class SceneConfig:
    """Everything that defines a synthetic scene.

    Attributes
    ----------
    width, height : int
        Frame size in pixels (at least 64x48).
    frames : int
        Number of frames.
    seed : int
        Seed of every random choice (textures, object schedule, noise).
    noise_sigma : float
        Standard deviation of the Gaussian sensor noise, in pixel values.
    illumination : float
        Relative amplitude of the slow illumination change (0.1 = +-10 %).
    water : bool
        Rippling water band at the bottom.
    foliage : bool
        Swaying tree on the right.
    water_amplitude : float
        Amplitude of the water's ripples, in pixel values (glints come on top).
    sway : float
        Amplitude of the foliage's sway at the top of the crown, in pixels.
    shadows : bool
        Soft cast shadows under objects (label 50).
    timestamp : bool
        Burnt-in timestamp outside the ROI (label 85).
    objects : int
        Number of moving objects over the clip.
    first_object : int
        Frame (1-based) before which no object enters: a clean warm-up.
    warmup : int
        Frames before the temporal ROI (written to ``temporalROI.txt``).
    fps : float
        Frame rate of the written video.
    """

    width: int = 320
    height: int = 240
    frames: int = 300
    seed: int = 0
    noise_sigma: float = 2.5
    illumination: float = 0.12
    water: bool = True
    foliage: bool = True
    water_amplitude: float = 16.0
    sway: float = 1.6
    shadows: bool = True
    timestamp: bool = True
    objects: int = 9
    first_object: int = 40
    warmup: int = 100
    fps: float = 25.0

    def check(self) -> None:
        """Raise ValueError on a value that cannot make a scene."""
        if self.width < 64 or self.height < 48:
            raise ValueError(f"the frame must be at least 64x48, got {self.width}x{self.height}")
        if self.frames < 1:
            raise ValueError(f"frames must be >= 1, got {self.frames}")
        if self.noise_sigma < 0:
            raise ValueError(f"noise_sigma must be >= 0, got {self.noise_sigma}")
        if not 0 <= self.illumination < 0.5:
            raise ValueError(f"illumination must be in [0, 0.5), got {self.illumination}")
        if self.objects < 0:
            raise ValueError(f"objects must be >= 0, got {self.objects}")
        if not 0 <= self.warmup < self.frames:
            raise ValueError(f"warmup must be in [0, frames), got {self.warmup} with {self.frames} frames")
        if self.fps <= 0:
            raise ValueError(f"fps must be > 0, got {self.fps}")


@dataclass(frozen=True)
class MovingObject:
    """One car or pedestrian crossing the scene at constant speed.

    Attributes
    ----------
    kind : str
        ``"car"`` or ``"person"``.
    enter : int
        Frame (1-based) at which its centre is at ``x0``.
    x0 : float
        Centre x at frame ``enter`` (off-screen: it walks or drives in).
    y : float
        Baseline (bottom) y of the object.
    speed : float
        Pixels per frame, signed.
    length, tall : float
        Size in pixels.
    color : tuple of float
        Base colour, BGR 0-255.
    """

    kind: str
    enter: int
    x0: float
    y: float
    speed: float
    length: float
    tall: float
    color: tuple[float, float, float]


def _smooth_noise(rng: np.random.Generator, h: int, w: int, scale: float, channels: int = 1) -> np.ndarray:
    """Band-limited noise in about [-1, 1]: random field blurred at ``scale`` pixels."""
    gh, gw = max(2, int(h / scale) + 2), max(2, int(w / scale) + 2)
    coarse = rng.standard_normal((gh, gw, channels)).astype(np.float32)
    field_ = cv2.resize(coarse, (w, h), interpolation=cv2.INTER_CUBIC)
    if field_.ndim == 2:
        field_ = field_[:, :, None]
    return np.clip(field_ / 1.5, -1.0, 1.0)


class SyntheticScene:
    """A deterministic synthetic scene: ``render(t) -> (image, labels)``.

    Frames are independent of each other (frame ``t``'s noise comes from a
    generator seeded with ``(seed, t)``), so any frame can be rendered alone and
    rendering is repeatable.

    Parameters
    ----------
    config : SceneConfig, optional
        The scene's definition; defaults give the bundled sample (320x240, 300
        frames, seed 0).

    Attributes
    ----------
    config : SceneConfig
        As given.
    objects : list of MovingObject
        The object schedule.
    roi : ndarray of bool, shape (H, W)
        Region of interest (False over the timestamp box).
    temporal_roi : tuple of int
        ``(warmup + 1, frames)``: the frames scored.
    """

    def __init__(self, config: SceneConfig | None = None, **overrides) -> None:
        config = config or SceneConfig()
        if overrides:
            config = SceneConfig(**{**asdict(config), **overrides})
        config.check()
        self.config = config
        c = config
        self.height, self.width = h, w = c.height, c.width
        rng = np.random.default_rng([c.seed, 0x5EED])
        self._yy, self._xx = np.mgrid[0:h, 0:w].astype(np.float32)
        # Layout (fractions of the frame).
        self.horizon = int(0.30 * h)
        self.road_top = int(0.52 * h)
        self.road_bottom = int(0.78 * h)
        self.water_top = int(0.80 * h) if c.water else h
        self.tree_x0 = int(0.68 * w)
        self._build_background(rng)
        self._build_water(rng)
        self._build_tree(rng)
        self.objects = self._schedule(rng)
        self.roi = np.ones((h, w), dtype=bool)
        self._stamp_box = None
        if c.timestamp:
            bw, bh = min(w - 4, int(0.40 * w)), max(10, int(0.065 * h))
            self._stamp_box = (2, 2, 2 + bw, 2 + bh)
            x0, y0, x1, y1 = self._stamp_box
            self.roi[y0:y1, x0:x1] = False
        self.temporal_roi = (c.warmup + 1, c.frames)

    # ------------------------------------------------------------------ build
    def _build_background(self, rng: np.random.Generator) -> None:
        h, w = self.height, self.width
        yy, xx = self._yy, self._xx
        bg = np.zeros((h, w, 3), np.float32)
        # Sky: vertical gradient plus soft clouds.
        t = yy / max(1, self.horizon)
        sky = np.stack([235 - 40 * t, 200 - 35 * t, 150 - 30 * t], axis=-1)
        clouds = _smooth_noise(rng, h, w, 18.0)[:, :, 0]
        sky += np.clip(clouds, 0, None)[:, :, None] * 45.0
        # Ground between horizon and road: grass-like verge with fine texture.
        verge = np.stack([60 + 0 * yy, 120 + 0 * yy, 95 + 0 * yy], axis=-1)
        verge += _smooth_noise(rng, h, w, 3.0, 3) * 18.0 + _smooth_noise(rng, h, w, 12.0, 1) * 15.0
        # Road: grey asphalt with grain and lane marks.
        road = np.full((h, w, 3), 105.0, np.float32)
        road += _smooth_noise(rng, h, w, 1.5, 1) * 10.0 + _smooth_noise(rng, h, w, 20.0, 1) * 8.0
        mid = (self.road_top + self.road_bottom) / 2
        dash = ((xx // 18) % 2 == 0) & (np.abs(yy - mid) < max(1.0, h / 160))
        road[dash] = 215.0
        kerb = (np.abs(yy - self.road_top) < max(1.0, h / 120)) | (np.abs(yy - self.road_bottom) < max(1.0, h / 120))
        road[kerb] = 185.0
        # Building on the left, standing on the horizon, with a grid of windows.
        bx1 = int(0.38 * w)
        btop = int(0.06 * h)
        building = np.stack([120 + 0 * yy, 135 + 0 * yy, 165 + 0 * yy], axis=-1)
        building += _smooth_noise(rng, h, w, 2.0, 1) * 9.0
        wx, wy = max(6, w // 26), max(6, h // 20)
        win = ((xx % wx) > wx * 0.35) & ((yy % wy) > wy * 0.45) & (yy > btop + 3)
        lit = rng.random(((h // wy) + 2, (w // wx) + 2)) < 0.3
        lit_map = lit[(yy // wy).astype(int), (xx // wx).astype(int)]
        building[win & lit_map] = (120.0, 210.0, 235.0)
        building[win & ~lit_map] = (70.0, 60.0, 55.0)
        # Compose by region.
        bg[:] = sky
        ground = yy >= self.horizon
        bg[ground] = verge[ground]
        in_building = (xx < bx1) & (yy >= btop) & (yy < self.road_top - h // 30)
        bg[in_building] = building[in_building]
        in_road = (yy >= self.road_top) & (yy < self.road_bottom)
        bg[in_road] = road[in_road]
        self.ground_mask = (yy >= self.horizon) & (yy < self.water_top)
        self.background = bg

    def _build_water(self, rng: np.random.Generator) -> None:
        h = self.height
        self._water_rows = slice(self.water_top, h)
        n = h - self.water_top
        if n <= 0:
            self._water = None
            return
        w = self.width
        yy = self._yy[self._water_rows]
        xx = self._xx[self._water_rows]
        base = np.stack([140 + 0 * yy, 105 + 0 * yy, 45 + 0 * yy], axis=-1)
        base += _smooth_noise(rng, n, w, 10.0, 1) * 10.0
        # Three wave trains: (kx, ky, omega) with a random phase field each.
        waves = []
        for kx, ky, omega in ((0.05, 0.9, 1.45), (-0.12, 0.6, 1.95), (0.21, 0.35, 2.65)):
            phase = _smooth_noise(rng, n, w, 25.0)[:, :, 0] * math.pi
            waves.append((np.float32(kx), np.float32(ky), np.float32(omega), phase))
        self._water = (base, xx, yy, waves)

    def _build_tree(self, rng: np.random.Generator) -> None:
        h, w = self.height, self.width
        if not self.config.foliage:
            self._tree = None
            return
        x0 = self.tree_x0
        top, bottom = int(0.04 * h), int(0.62 * h)
        ph, pw = bottom - top, w - x0
        yy, xx = np.mgrid[0:ph, 0:pw].astype(np.float32)
        # Canopy: a blob made of several ellipses, with ragged borders.
        canopy = np.zeros((ph, pw), np.float32)
        for _ in range(7):
            cy, cx = rng.uniform(0.15, 0.7) * ph, rng.uniform(0.2, 0.95) * pw
            ry, rx = rng.uniform(0.18, 0.3) * ph, rng.uniform(0.22, 0.4) * pw
            canopy = np.maximum(canopy, 1.0 - ((yy - cy) / ry) ** 2 - ((xx - cx) / rx) ** 2)
        ragged = _smooth_noise(rng, ph, pw, 2.5)[:, :, 0]
        leaves = (canopy + 0.35 * ragged) > 0.05
        # Leaf texture: clumps of light and dark green, with sky holes inside.
        clumps = _smooth_noise(rng, ph, pw, 2.0, 1)[:, :, 0]
        holes = _smooth_noise(rng, ph, pw, 1.6, 1)[:, :, 0] > 0.55
        green = np.stack([40 + 25 * clumps, 110 + 60 * clumps, 55 + 30 * clumps], axis=-1)
        alpha = (leaves & ~holes).astype(np.float32)
        alpha = cv2.GaussianBlur(alpha, (3, 3), 0.6)
        # Trunk, static, below the canopy.
        tx = int(0.55 * pw)
        tw = max(3, pw // 14)
        trunk = (np.abs(xx - tx) < tw) & (yy > 0.55 * ph)
        self._tree = dict(
            top=top, bottom=bottom, x0=x0,
            green=green.astype(np.float32), alpha=alpha,
            trunk=trunk, xx=xx, yy=yy, phase=_smooth_noise(rng, ph, pw, 6.0)[:, :, 0] * math.pi,
        )
        # The trunk is part of the static background.
        region = self.background[top:bottom, x0:]
        region[trunk] = (40.0, 55.0, 75.0)

    def _schedule(self, rng: np.random.Generator) -> list[MovingObject]:
        c = self.config
        h, w = self.height, self.width
        objects = []
        if c.objects == 0 or c.frames <= c.first_object:
            return objects
        lanes = [
            self.road_top + 0.42 * (self.road_bottom - self.road_top),
            self.road_bottom - 0.08 * (self.road_bottom - self.road_top),
        ]
        span = c.frames - c.first_object
        enters = np.sort(rng.uniform(0, 1, c.objects)) * span * 0.85 + c.first_object
        for i, enter in enumerate(enters):
            car = rng.random() < 0.55
            direction = 1.0 if rng.random() < 0.5 else -1.0
            if car:
                length, tall = rng.uniform(0.13, 0.18) * w, rng.uniform(0.075, 0.095) * h
                speed = rng.uniform(1.6, 3.2) * w / 320
                y = lanes[0] if direction > 0 else lanes[1]
                color = tuple(float(v) for v in rng.choice(
                    [(40, 40, 200), (200, 80, 30), (30, 30, 30), (220, 220, 225), (60, 160, 200), (90, 130, 60)]))
            else:
                length, tall = rng.uniform(0.025, 0.035) * w, rng.uniform(0.11, 0.14) * h
                speed = rng.uniform(0.55, 1.1) * w / 320
                # Pedestrians walk on the verge above the road or on the kerb.
                y = self.road_top - rng.uniform(0.0, 0.08) * h
                color = tuple(float(v) for v in rng.uniform(30, 200, 3))
            x0 = -length if direction > 0 else w + length
            objects.append(
                MovingObject("car" if car else "person", int(round(enter)), float(x0), float(y),
                             float(direction * speed), float(length), float(tall), color)
            )
        return objects

    # ----------------------------------------------------------------- render
    def illumination(self, t: int) -> np.ndarray:
        """Per-channel gain (BGR) of frame ``t``: a slow drift and a slow cycle."""
        c = self.config
        phase = 2 * math.pi * (t - 1) / max(c.frames, 2)
        g = 1.0 + c.illumination * (0.6 * math.sin(phase) - 0.4 * math.sin(2.3 * phase + 1.0))
        warm = 0.3 * c.illumination * math.sin(phase + 0.7)
        return np.array([g * (1 - warm), g, g * (1 + warm)], np.float32)

    def _object_shape(self, obj: MovingObject, t: int):
        """(x0, y0, alpha patch, colour patch) of ``obj`` at frame ``t``, or None off-screen."""
        cx = obj.x0 + obj.speed * (t - obj.enter)
        L, T = obj.length, obj.tall
        x0, x1 = int(math.floor(cx - L / 2 - 2)), int(math.ceil(cx + L / 2 + 2))
        y0, y1 = int(math.floor(obj.y - T - 2)), int(math.ceil(obj.y + 2))
        if x1 <= 0 or x0 >= self.width or y1 <= 0 or y0 >= self.height:
            return None
        yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float32)
        yy += 0.5
        xx += 0.5
        if obj.kind == "car":
            # Rounded box for the body plus a cabin on top.
            def box(cx_, cy_, hx, hy, r):
                qx = np.abs(xx - cx_) - (hx - r)
                qy = np.abs(yy - cy_) - (hy - r)
                out = np.hypot(np.maximum(qx, 0), np.maximum(qy, 0))
                return out + np.minimum(np.maximum(qx, qy), 0) - r

            body = box(cx, obj.y - 0.3 * T, L / 2, 0.3 * T, 0.12 * T)
            cabin = box(cx - 0.05 * L * np.sign(obj.speed), obj.y - 0.72 * T, 0.3 * L, 0.22 * T, 0.12 * T)
            sdf = np.minimum(body, cabin)
            color = np.empty(yy.shape + (3,), np.float32)
            color[:] = obj.color
            glass = cabin < -1.2
            color[glass] = (95.0, 80.0, 70.0)
            wheels = (np.hypot(np.abs(xx - cx) - 0.3 * L, yy - obj.y + 0.05 * T) < 0.16 * T)
            color[wheels] = (25.0, 25.0, 25.0)
        else:
            # Pedestrian: head, torso and two swinging legs.
            stride = math.sin(0.35 * (t - obj.enter)) * 0.25 * L
            head = np.hypot(xx - cx, yy - (obj.y - 0.88 * T)) - 0.12 * T
            torso = np.hypot((xx - cx) / (0.5 * L), (yy - (obj.y - 0.55 * T)) / (0.26 * T)) - 1.0
            torso *= 0.26 * T
            leg_y = np.clip((yy - (obj.y - 0.32 * T)) / (0.32 * T), 0, 1)
            leg1 = np.abs(xx - (cx + stride * leg_y)) - 0.14 * L
            leg2 = np.abs(xx - (cx - stride * leg_y)) - 0.14 * L
            legs = np.minimum(leg1, leg2)
            legs = np.maximum(legs, np.abs(yy - (obj.y - 0.16 * T)) - 0.17 * T)
            sdf = np.minimum(np.minimum(head, torso), legs)
            color = np.empty(yy.shape + (3,), np.float32)
            color[:] = obj.color
            color[head < 0.5] = (90.0, 130.0, 175.0)
            color[(legs < 0.5) & (torso > 0)] = (60.0, 50.0, 45.0)
        alpha = np.clip(0.5 - sdf, 0.0, 1.0)
        return x0, y0, alpha, color

    def render(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Frame ``t`` (1-based): ``(image BGR uint8 (H, W, 3), labels uint8 (H, W))``."""
        c = self.config
        if not 1 <= t <= c.frames:
            raise IndexError(f"frame {t} is outside 1..{c.frames}")
        h, w = self.height, self.width
        img = self.background.copy()
        # Dynamic background: water.
        if self._water is not None:
            base, xx, yy, waves = self._water
            s = np.zeros(xx.shape, np.float32)
            for kx, ky, omega, phase in waves:
                s += np.sin(kx * xx + ky * yy - omega * np.float32(t) + phase)
            s /= 3.0
            water = base + (s * np.float32(c.water_amplitude))[:, :, None]
            glint = np.clip(s - 0.6, 0, None) * np.float32(6.0 * c.water_amplitude)
            water += glint[:, :, None]
            img[self._water_rows] = water
        # Dynamic background: swaying, flickering foliage.
        if self._tree is not None:
            tr = self._tree
            ph = tr["bottom"] - tr["top"]
            sway = 1.0 - tr["yy"] / ph  # the crown moves more than the bottom
            a = c.sway
            dx = (a * math.sin(0.9 * t) + 0.45 * a * np.sin(1.7 * t + tr["phase"])) * sway
            dy = 0.3 * a * np.sin(1.3 * t + tr["phase"]) * sway
            map_x = (tr["xx"] - dx).astype(np.float32)
            map_y = (tr["yy"] - dy).astype(np.float32)
            green = cv2.remap(tr["green"], map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
            alpha = cv2.remap(tr["alpha"], map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
            flicker = 1.0 + 0.12 * np.sin(2.1 * t + 3.0 * tr["phase"])
            region = img[tr["top"]:tr["bottom"], tr["x0"]:]
            a = alpha[:, :, None]
            region[:] = region * (1 - a) + green * flicker[:, :, None] * a
        labels = np.full((h, w), LABEL_STATIC, np.uint8)
        # Objects, back to front (further up = further away), with shadows first.
        visible = []
        for obj in self.objects:
            shape = self._object_shape(obj, t)
            if shape is not None:
                visible.append((obj, shape))
        visible.sort(key=lambda item: item[0].y)
        if c.shadows and visible:
            shade = np.zeros((h, w), np.float32)
            for obj, (x0, y0, alpha, _) in visible:
                # Cast shadow: the silhouette squashed onto the ground and offset.
                sh_h = max(2, int(alpha.shape[0] * 0.45))
                squashed = cv2.resize(alpha, (alpha.shape[1], sh_h), interpolation=cv2.INTER_AREA)
                sy0 = int(round(obj.y)) - sh_h // 3
                sx0 = x0 + int(round(0.22 * obj.tall))
                _paste_max(shade, squashed, sx0, sy0)
            shade = cv2.GaussianBlur(shade, (0, 0), max(1.0, h / 160))
            shade *= self.ground_mask
            # No faint tails: a pixel is either shadowed (label 50) or untouched.
            shade[shade < 0.04] = 0.0
            img *= (1.0 - 0.5 * shade)[:, :, None]
            labels[shade > 0] = LABEL_SHADOW
        obj_alpha = np.zeros((h, w), np.float32)
        for obj, (x0, y0, alpha, color) in visible:
            ys, xs, ps = _clip_patch(x0, y0, alpha.shape, w, h)
            if ys is None:
                continue
            a = alpha[ps][:, :, None]
            img[ys, xs] = img[ys, xs] * (1 - a) + color[ps] * a
            obj_alpha[ys, xs] = np.maximum(obj_alpha[ys, xs], alpha[ps])
        labels[obj_alpha >= 0.95] = LABEL_MOTION
        rim = (obj_alpha > 0) & (obj_alpha < 0.95)
        labels[rim] = LABEL_UNKNOWN
        # Global illumination, then sensor noise.
        img *= self.illumination(t)
        if c.noise_sigma > 0:
            rng = np.random.default_rng([c.seed, t])
            img += rng.standard_normal(img.shape, dtype=np.float32) * np.float32(c.noise_sigma)
        out = np.clip(img + 0.5, 0, 255).astype(np.uint8)
        if self._stamp_box is not None:
            x0, y0, x1, y1 = self._stamp_box
            out[y0:y1, x0:x1] = 0
            secs = (t - 1) / c.fps
            text = f"2026-01-01 12:{int(secs // 60):02d}:{secs % 60:05.2f} #{t:04d}"
            font = cv2.FONT_HERSHEY_SIMPLEX
            (tw, th), _ = cv2.getTextSize(text, font, 1.0, 1)
            scale = min((x1 - x0 - 3) / tw, (y1 - y0 - 3) / th)
            cv2.putText(out, text, (x0 + 1, y1 - 2), font, scale, (255, 255, 255), 1, cv2.LINE_AA)
            labels[~self.roi] = LABEL_OUTSIDE_ROI
        return out, labels

    def __len__(self) -> int:
        return self.config.frames

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for t in range(1, self.config.frames + 1):
            yield self.render(t)


def _clip_patch(x0: int, y0: int, shape: tuple[int, int], w: int, h: int):
    ph, pw = shape
    ax0, ay0 = max(x0, 0), max(y0, 0)
    ax1, ay1 = min(x0 + pw, w), min(y0 + ph, h)
    if ax0 >= ax1 or ay0 >= ay1:
        return None, None, None
    return (
        slice(ay0, ay1),
        slice(ax0, ax1),
        (slice(ay0 - y0, ay1 - y0), slice(ax0 - x0, ax1 - x0)),
    )


def _paste_max(dst: np.ndarray, patch: np.ndarray, x0: int, y0: int) -> None:
    h, w = dst.shape
    ys, xs, ps = _clip_patch(x0, y0, patch.shape, w, h)
    if ys is not None:
        dst[ys, xs] = np.maximum(dst[ys, xs], patch[ps])


# ---------------------------------------------------------------------- writing


def write_sequence(
    scene: SyntheticScene,
    out: str | os.PathLike,
    *,
    jpeg_quality: int = 75,
    image_format: str = "jpg",
    progress: bool = False,
) -> Path:
    """Write ``scene`` as a CDnet-layout folder at ``out`` (replaced atomically).

    Writes ``input/in%06d.jpg`` (or ``.png``), ``groundtruth/gt%06d.png``,
    ``ROI.bmp`` (255 inside) and ``temporalROI.txt``.

    Returns
    -------
    Path
        ``out``.
    """
    out = Path(out)
    folder = AtomicDir(out)
    tmp = folder.open()
    try:
        (tmp / "input").mkdir()
        (tmp / "groundtruth").mkdir()
        if image_format not in ("jpg", "png"):
            raise ValueError(f"image_format must be 'jpg' or 'png', got {image_format!r}")
        params = [cv2.IMWRITE_JPEG_QUALITY, int(jpeg_quality)] if image_format == "jpg" else [
            cv2.IMWRITE_PNG_COMPRESSION, 6]
        frames = range(1, len(scene) + 1)
        if progress:
            from tqdm import tqdm

            frames = tqdm(frames, desc=f"writing {out.name}", unit="frame")
        for t in frames:
            image, labels = scene.render(t)
            if not cv2.imwrite(str(tmp / "input" / f"in{t:06d}.{image_format}"), image, params):
                raise OSError(f"could not write frame {t} into {tmp}")
            cv2.imwrite(str(tmp / "groundtruth" / f"gt{t:06d}.png"), labels, [cv2.IMWRITE_PNG_COMPRESSION, 9])
        cv2.imwrite(str(tmp / "ROI.bmp"), np.where(scene.roi, 255, 0).astype(np.uint8))
        first, last = scene.temporal_roi
        (tmp / "temporalROI.txt").write_text(f"{first} {last}\n")
        folder.commit()
    except BaseException:
        folder.abort()
        raise
    return out


def write_video(
    scene: SyntheticScene,
    path: str | os.PathLike,
    *,
    fourcc: str | None = None,
    progress: bool = False,
) -> Path:
    """Write ``scene`` as a video file (``.mp4``: MPEG-4 Part 2; ``.avi``: MJPG).

    Written under a temporary name and renamed when complete.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fourcc is None:
        fourcc = {".mp4": "mp4v", ".m4v": "mp4v", ".avi": "MJPG", ".mkv": "MJPG"}.get(path.suffix.lower())
        if fourcc is None:
            raise ValueError(f"give fourcc= for a {path.suffix or 'suffix-less'} file, or use .mp4 or .avi")
    tmp = path.with_name(f".{path.stem}.partial-{os.getpid()}{path.suffix}")
    c = scene.config
    writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*fourcc), c.fps, (c.width, c.height))
    if not writer.isOpened():
        raise OSError(f"OpenCV cannot write {fourcc} video to {path}")
    try:
        if fourcc == "MJPG":
            writer.set(cv2.VIDEOWRITER_PROP_QUALITY, 90)
        frames = range(1, len(scene) + 1)
        if progress:
            from tqdm import tqdm

            frames = tqdm(frames, desc=f"writing {path.name}", unit="frame")
        for t in frames:
            writer.write(scene.render(t)[0])
        writer.release()
        os.replace(tmp, path)
    except BaseException:
        writer.release()
        tmp.unlink(missing_ok=True)
        raise
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m bgsub.synthetic``: write a synthetic scene to disk."""
    defaults = SceneConfig()
    p = argparse.ArgumentParser(
        prog="python -m bgsub.synthetic",
        description="Render a deterministic synthetic scene with exact CDnet ground truth.",
    )
    p.add_argument("--out", type=Path, help="CDnet-layout folder to write (input/, groundtruth/, ROI.bmp, ...)")
    p.add_argument("--video", type=Path, help="video file to write (.mp4 or .avi)")
    p.add_argument("--width", type=int, default=defaults.width)
    p.add_argument("--height", type=int, default=defaults.height)
    p.add_argument("--frames", type=int, default=defaults.frames)
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--noise", type=float, default=defaults.noise_sigma, help="sensor noise sigma (pixel values)")
    p.add_argument("--objects", type=int, default=defaults.objects)
    p.add_argument("--warmup", type=int, default=defaults.warmup, help="frames before the temporal ROI")
    p.add_argument("--jpeg-quality", type=int, default=75)
    p.add_argument("--png", action="store_true", help="write input frames as PNG instead of JPEG")
    args = p.parse_args(argv)
    if args.out is None and args.video is None:
        p.error("give --out FOLDER and/or --video FILE")
    try:
        scene = SyntheticScene(SceneConfig(
            width=args.width, height=args.height, frames=args.frames, seed=args.seed,
            noise_sigma=args.noise, objects=args.objects, warmup=args.warmup,
        ))
    except ValueError as exc:
        p.error(str(exc))
    if args.out is not None:
        write_sequence(scene, args.out, jpeg_quality=args.jpeg_quality,
                       image_format="png" if args.png else "jpg", progress=True)
        print(f"wrote {args.out}")
    if args.video is not None:
        write_video(scene, args.video, progress=True)
        print(f"wrote {args.video}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
