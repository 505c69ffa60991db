// Load .vrma files with three.js's GLTFLoader and @pixiv/three-vrm-animation's loader plugin (headless Node),
// and report what the plugin made of them.
// Usage: SAPIENS_NODE_MODULES=<folder with three, @pixiv/three-vrm-animation> node tests/load_vrma.mjs FRAME a.vrma ...
// Prints one JSON line per file: duration, rest hips position, each bone track's key count, and each rotation
// (x, y, z, w) and hips translation at key FRAME.
import fs from "fs";
import path from "path";
import { pathToFileURL } from "url";

const modules = process.env.SAPIENS_NODE_MODULES;
const load = (file) => import(pathToFileURL(path.join(modules, file)).href);
const { GLTFLoader } = await load("three/examples/jsm/loaders/GLTFLoader.js");
const { VRMAnimationLoaderPlugin } = await load("@pixiv/three-vrm-animation/lib/three-vrm-animation.module.js");

const frame = Number(process.argv[2]);
for (const file of process.argv.slice(3)) {
  const data = fs.readFileSync(file);
  const loader = new GLTFLoader();
  loader.register((parser) => new VRMAnimationLoaderPlugin(parser));
  const gltf = await loader.parseAsync(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength), "");
  const animations = gltf.userData.vrmAnimations || [];
  const out = { file, animations: animations.length };
  if (animations.length) {
    const animation = animations[0];
    out.duration = animation.duration;
    out.restHipsPosition = animation.restHipsPosition.toArray();
    out.rotation = Object.fromEntries([...animation.humanoidTracks.rotation].map(([bone, track]) => [bone, track.times.length]));
    out.translation = Object.fromEntries([...animation.humanoidTracks.translation].map(([bone, track]) => [bone, track.times.length]));
    out.rotationAt = Object.fromEntries([...animation.humanoidTracks.rotation].map(([bone, track]) => [bone, Array.from(track.values.slice(4 * frame, 4 * frame + 4))]));
    out.hipsAt = Array.from(animation.humanoidTracks.translation.get("hips").values.slice(3 * frame, 3 * frame + 3));
  }
  console.log(JSON.stringify(out));
}
