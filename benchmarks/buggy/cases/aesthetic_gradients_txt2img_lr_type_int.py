# /// script
# dependencies = ["torch==1.12.1", "pytorch-lightning==1.4.2", "omegaconf", "transformers", "diffusers"]
# ///
# (the environment of the repository in October 2022: the CompVis latent-diffusion stack)
# Stable Diffusion with aesthetic gradients (scripts/txt2img.py): main() declares `--aesthetic_lr`, the
# learning rate of the few gradient steps that personalise the CLIP text embedding, with type=int, and
# copies it into the model config before the model is built from it; any rate passed on the command line
# ("--aesthetic_lr 0.00001") is rejected ("invalid int value").
# evidence: vicgalle/stable-diffusion-aesthetic-gradients#4 ("--aesthetic_lr through txt2img.py is expecting
# int, should be float"; the author: "I've just fixed it in main"), commit
# vicgalle/stable-diffusion-aesthetic-gradients@b7ec84f6f5c6802a427adcb3d8ca13b0ba4a862b ("Change
# --aesthetic_lr to float type")
import argparse, os, sys, glob
import torch
import numpy as np
from omegaconf import OmegaConf
from pytorch_lightning import seed_everything

from ldm.util import instantiate_from_config
from ldm.models.diffusion.ddim import DDIMSampler
from ldm.models.diffusion.plms import PLMSSampler


def load_model_from_config(config, ckpt, verbose=False):
    print(f"Loading model from {ckpt}")
    pl_sd = torch.load(ckpt, map_location="cpu")
    sd = pl_sd["state_dict"]
    model = instantiate_from_config(config.model)
    m, u = model.load_state_dict(sd, strict=False)
    model.cuda()
    model.eval()
    return model


def main():
    parser = argparse.ArgumentParser()

    parser.add_argument(
        "--prompt",
        type=str,
        nargs="?",
        default="a painting of a virus monster playing guitar",
        help="the prompt to render",
    )
    parser.add_argument(
        "--plms",
        action='store_true',
        help="use plms sampling",
    )
    parser.add_argument(
        "--config",
        type=str,
        default="configs/stable-diffusion/v1-inference-aesthetic.yaml",
        help="path to config which constructs model",
    )
    parser.add_argument(
        "--ckpt",
        type=str,
        default="models/ldm/stable-diffusion-v1/model.ckpt",
        help="path to checkpoint of model",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=42,
        help="the seed (for reproducible sampling)",
    )
    parser.add_argument(
        "--aesthetic_steps",
        type=int,
        help="number of steps for the aesthetic personalization",
        default=10,
    )
    parser.add_argument(
        "--aesthetic_lr",
        type=int,  # BUG TL509: a learning rate declared int: any rate given on the command line is rejected ("invalid int value")
        help="learning rate for the aesthetic personalization",
        default=0.0001,
    )
    parser.add_argument(
        "--aesthetic_embedding",
        type=str,
        help="aesthetic embedding file",
        default="aesthetic_embeddings/sac_8plus.pt",
    )
    opt = parser.parse_args()

    seed_everything(opt.seed)

    config = OmegaConf.load(f"{opt.config}")

    # Override config with personalization arguments
    config.model.params.cond_stage_config.params.T = opt.aesthetic_steps
    config.model.params.cond_stage_config.params.lr = opt.aesthetic_lr
    config.model.params.cond_stage_config.params.aesthetic_embedding_path = (
        opt.aesthetic_embedding
    )

    model = load_model_from_config(config, f"{opt.ckpt}")

    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    model = model.to(device)

    if opt.plms:
        sampler = PLMSSampler(model)
    else:
        sampler = DDIMSampler(model)
    # (sampling and saving the images, shortened)


if __name__ == "__main__":
    main()
