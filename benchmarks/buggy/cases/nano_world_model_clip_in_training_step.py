# nano-world-model's Lightning training module (src/experiments/train_experiment.py): training_step computes
# the diffusion loss and then clips the gradient norm (a copy of torch's clip_grad_norm_ with a clip_grad
# switch, on from gradient_clip_start_step) before returning the loss. Lightning runs backward() after
# training_step returns, so the clip sees no gradient or the previous step's: the optimizer's gradient is never
# capped. (The VAE encoding, timestep sampling and logging are shortened here.)
# evidence: simchowitzlabpublic/nano-world-model#22 ("Clip gradients in configure_gradient_clipping instead
# of training_step": "The clip call (`clip_grad_norm_`) was inside `training_step`, before `.backward()`
# runs ... the optimizer's gradient was never capped"; merged)
import torch
from einops import rearrange
from pytorch_lightning import LightningModule

from utils.nanowm_utils import clip_grad_norm_


class NanoWMTrainingModule(LightningModule):
    def __init__(self, args, model, diffusion, vae):
        super(NanoWMTrainingModule, self).__init__()
        self.args = args
        self.model = model
        self.diffusion = diffusion
        self.vae = vae

    def training_step(self, batch, batch_idx):
        x = batch["video"].to(self.device)
        with torch.no_grad():
            b, _, _, _, _ = x.shape
            x = rearrange(x, "b f c h w -> (b f) c h w").contiguous()
            x = self.vae.encode(x)
            x = rearrange(x, "(b f) c h w -> b f c h w", b=b).contiguous()
        model_kwargs = dict(y=None)
        t = torch.randint(0, self.diffusion.num_timesteps, (x.shape[0], x.shape[1]), device=self.device)

        loss_dict = self.diffusion.training_losses(self.model, x, t, model_kwargs)
        loss = loss_dict["loss"].mean()

        if self.global_step < self.args.experiment.training.gradient_clip_start_step:
            gradient_norm = clip_grad_norm_(self.model.parameters(), self.args.experiment.training.gradient_clip_norm, clip_grad=False)
        else:
            gradient_norm = clip_grad_norm_(self.model.parameters(), self.args.experiment.training.gradient_clip_norm, clip_grad=True)  # BUG TL792: clipped inside training_step, before Lightning's backward: the step's gradient is never clipped

        self.log("train_loss", loss, prog_bar=True, logger=True, sync_dist=True, batch_size=x.shape[0])
        self.log("gradient_norm", gradient_norm, logger=True, sync_dist=True, batch_size=x.shape[0])
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.model.parameters(), lr=self.args.experiment.training.lr, weight_decay=0)
